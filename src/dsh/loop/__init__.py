"""The concrete loop: `AgentLoop` (`ctx.agent_loop`) and the `ReactLoopAgent` driver."""

from ._agent import ReactLoopAgent
from ._service import (
    AGENT_LOOP,
    CONFIG_START_FAILED,
    HARNESS_IDENTITY,
    AgentLoop,
    AgentLoopPlugin,
    ConfigAgent,
    ConfigStartFailed,
    LoopConfig,
)

__all__ = [
    "AGENT_LOOP",
    "CONFIG_START_FAILED",
    "HARNESS_IDENTITY",
    "AgentLoop",
    "AgentLoopPlugin",
    "ConfigAgent",
    "ConfigStartFailed",
    "LoopConfig",
    "ReactLoopAgent",
]
