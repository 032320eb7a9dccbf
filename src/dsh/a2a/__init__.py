"""The A2A door (Agent2Agent, spec 1.0 with 0.3 compatibility, through the official a2a-sdk):
a remote agent or client drives dsh sessions — one context is one session — and reads their
turns as tasks. Served by `dsh a2a` and inside `dsh web`; `A2ASubagentsPlugin` (profile row
`a2a_subagents`) makes remote A2A agents subagents. Needs the `a2a` extra, loaded when a name
other than the paths is first used."""

from typing import TYPE_CHECKING, Any

from .._lazy import lazy_attribute
from ._paths import A2A_PATH, CARD_METHODS, CARD_PATH, RPC_METHODS

if TYPE_CHECKING:
    from ._door import A2ADoor
    from ._executor import ANSWER, CHANGED, DshExecutor, SessionHost
    from ._subagent import (
        A2A_PROGRESS,
        A2AAgentSpec,
        A2AProgress,
        A2ASubagentsConfig,
        A2ASubagentsPlugin,
    )

_LAZY = {
    "A2ADoor": "._door",
    "ANSWER": "._executor",
    "CHANGED": "._executor",
    "DshExecutor": "._executor",
    "SessionHost": "._executor",
    "A2A_PROGRESS": "._subagent",
    "A2AAgentSpec": "._subagent",
    "A2AProgress": "._subagent",
    "A2ASubagentsConfig": "._subagent",
    "A2ASubagentsPlugin": "._subagent",
}


def __getattr__(name: str) -> Any:
    return lazy_attribute(__name__, name, _LAZY)


__all__ = [
    "A2A_PATH",
    "A2A_PROGRESS",
    "ANSWER",
    "CARD_METHODS",
    "CARD_PATH",
    "CHANGED",
    "RPC_METHODS",
    "A2AAgentSpec",
    "A2ADoor",
    "A2AProgress",
    "A2ASubagentsConfig",
    "A2ASubagentsPlugin",
    "DshExecutor",
    "SessionHost",
]
