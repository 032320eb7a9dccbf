"""dsh: an agent harness in which everything is a plugin.

The curated public surface: `dsh.Agent` (the facade) and what its users need, then the
lower-level pieces it is built from. Packages (`dsh.kernel`, `dsh.llm`, `dsh.session`,
`dsh.events`, `dsh.prompt`, `dsh.tools`, `dsh.agent`, `dsh.loop`, `dsh.testing`) export the
rest of their own API. Everything loads on first use, so `import dsh` stays light; inside
the packages imports are plain, except at an optional extra's boundary (`dsh._lazy`).
"""

import importlib
from typing import TYPE_CHECKING, Any

from ._lazy import lazy_attribute
from ._version import __version__

if TYPE_CHECKING:
    from . import events
    from .agent import (
        AgentHandle,
        AgentOptions,
        CancelCause,
        CreateAgentOptions,
        ResumeAgentOptions,
        RunResult,
        run_prompt,
        session_events,
    )
    from .facade import (
        Agent,
        JsonlStore,
        MemoryStore,
        ModelSettings,
        OutputValidationError,
        RunError,
        SqliteStore,
        StreamedRun,
    )
    from .kernel import Aborted, CancelSignal, Context, EventSpec, Mode, ServiceKey
    from .llm import Message, user_message
    from .plugins.approval import ApprovalRequest
    from .plugins.ask_user import Answer, QuestionRequest
    from .plugins.usage import UsageLimits
    from .profiles import CompositionError, boot, load_profile
    from .session import SessionMeta, Usage, session_usage
    from .tools import Decision, tool

_LAZY = {
    **dict.fromkeys(
        [
            "Agent",
            "JsonlStore",
            "MemoryStore",
            "ModelSettings",
            "OutputValidationError",
            "RunError",
            "SqliteStore",
            "StreamedRun",
        ],
        "dsh.facade",
    ),
    **dict.fromkeys(
        [
            "AgentHandle",
            "AgentOptions",
            "CancelCause",
            "CreateAgentOptions",
            "ResumeAgentOptions",
            "RunResult",
            "run_prompt",
            "session_events",
        ],
        "dsh.agent",
    ),
    **dict.fromkeys(
        [
            "Aborted",
            "CancelSignal",
            "EventSpec",
            "Mode",
            "ServiceKey",
        ],
        "dsh.kernel",
    ),
    **dict.fromkeys(["CompositionError", "boot", "load_profile"], "dsh.profiles"),
    "Context": "dsh._context",
    "ApprovalRequest": "dsh.plugins.approval",
    "Answer": "dsh.plugins.ask_user",
    "QuestionRequest": "dsh.plugins.ask_user",
    "Decision": "dsh.tools",
    "Message": "dsh.llm",
    "user_message": "dsh.llm",
    "SessionMeta": "dsh.session",
    "Usage": "dsh.session",
    "UsageLimits": "dsh.plugins.usage",
    "session_usage": "dsh.session",
    "tool": "dsh.tools",
}
_SUBPACKAGES = frozenset({"events"})


def __getattr__(name: str) -> Any:
    """Load the public names on first use, so `import dsh` stays light (a process that needs
    only `dsh.client` pays for nothing else)."""
    if name in _SUBPACKAGES:
        return importlib.import_module(f"dsh.{name}")
    return lazy_attribute(__name__, name, _LAZY)


__all__ = [
    "Aborted",
    "Agent",
    "AgentHandle",
    "AgentOptions",
    "Answer",
    "ApprovalRequest",
    "CancelCause",
    "CancelSignal",
    "CompositionError",
    "Context",
    "CreateAgentOptions",
    "Decision",
    "EventSpec",
    "JsonlStore",
    "MemoryStore",
    "Message",
    "Mode",
    "ModelSettings",
    "OutputValidationError",
    "QuestionRequest",
    "ResumeAgentOptions",
    "RunError",
    "RunResult",
    "ServiceKey",
    "SessionMeta",
    "SqliteStore",
    "StreamedRun",
    "Usage",
    "UsageLimits",
    "__version__",
    "boot",
    "events",
    "load_profile",
    "run_prompt",
    "session_events",
    "session_usage",
    "tool",
    "user_message",
]
