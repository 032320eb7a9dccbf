"""dsh: an agent harness in which everything is a plugin.

The curated public surface. Packages (`dsh.kernel`, `dsh.llm`, `dsh.session`, `dsh.prompt`,
`dsh.tools`, `dsh.agent`, `dsh.loop`, `dsh.testing`) export the rest of their own API.
"""

from ._version import __version__
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
from .session import SessionMeta
from .tools import tool

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
    "tool",
    "user_message",
]
