"""The Agent Client Protocol: `dsh acp` serves editors (Zed and other ACP clients) as their
agent, and `AcpSubagentsPlugin` runs subagents as external ACP agent processes. Built on the
official SDK (`agent-client-protocol`, extra `dsh[acp]`)."""

from .._lazy import extra_hint

try:
    import acp as _sdk  # noqa: F401  # checked first: the one clear error when it is missing
except ImportError as exc:  # pragma: no cover - the extra is installed in development
    raise ImportError(
        f"the Agent Client Protocol needs dsh's acp extra: {extra_hint('acp')}"
    ) from exc

from ._agent import AcpAgent, AcpSettings
from ._modes import MODE_EVENT, ModeId
from ._stdio import serve
from ._subagent import AcpAgentSpec, AcpSubagentsConfig, AcpSubagentsPlugin
from ._updates import Transcript

__all__ = [
    "MODE_EVENT",
    "AcpAgent",
    "AcpAgentSpec",
    "AcpSettings",
    "AcpSubagentsConfig",
    "AcpSubagentsPlugin",
    "ModeId",
    "Transcript",
    "serve",
]
