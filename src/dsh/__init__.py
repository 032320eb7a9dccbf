"""dsh: an agent harness in which everything is a plugin.

The curated public surface. Packages (`dsh.kernel`, `dsh.llm`, `dsh.session`, `dsh.prompt`,
`dsh.tools`, `dsh.agent`, `dsh.loop`, `dsh.testing`) export the rest of their own API.
"""

from typing import TYPE_CHECKING, Any

from ._version import __version__

if TYPE_CHECKING:
    from .agent import (
        Agent,
        AgentHandle,
        AgentOptions,
        CancelCause,
        CreateAgentOptions,
        ResumeAgentOptions,
        RunResult,
        run_prompt,
        session_events,
    )
    from .kernel import (
        Aborted,
        CancelSignal,
        CompositionError,
        Context,
        EventSpec,
        Mode,
        ServiceKey,
        boot,
        load_profile,
    )
    from .llm import Message, user_message
    from .session import SessionMeta, session_usage
    from .tools import tool

_LAZY = {
    **dict.fromkeys(
        [
            "Agent",
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
            "CompositionError",
            "Context",
            "EventSpec",
            "Mode",
            "ServiceKey",
            "boot",
            "load_profile",
        ],
        "dsh.kernel",
    ),
    "Message": "dsh.llm",
    "user_message": "dsh.llm",
    "SessionMeta": "dsh.session",
    "session_usage": "dsh.session",
    "tool": "dsh.tools",
}


def __getattr__(name: str) -> Any:
    """Load the public names on first use, so `import dsh` stays light."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'dsh' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "Aborted",
    "Agent",
    "AgentHandle",
    "AgentOptions",
    "CancelCause",
    "CancelSignal",
    "CompositionError",
    "Context",
    "CreateAgentOptions",
    "EventSpec",
    "Message",
    "Mode",
    "ResumeAgentOptions",
    "RunResult",
    "ServiceKey",
    "SessionMeta",
    "__version__",
    "boot",
    "load_profile",
    "run_prompt",
    "session_events",
    "session_usage",
    "tool",
    "user_message",
]
