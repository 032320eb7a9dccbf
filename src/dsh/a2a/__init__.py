"""The A2A door (Agent2Agent, spec 1.0 with 0.3 compatibility, through the official a2a-sdk):
a remote agent or client drives dsh sessions — one context is one session — and reads their
turns as tasks. Served by `dsh a2a` and inside `dsh web`; `A2ASubagentsPlugin` (profile row
`a2a_subagents`) makes remote A2A agents subagents. Needs the `a2a` extra."""

from ._door import A2A_PATH, CARD_PATH, A2ADoor
from ._executor import ANSWER, CHANGED, DshExecutor, SessionHost
from ._subagent import (
    A2A_PROGRESS,
    A2AAgentSpec,
    A2AProgress,
    A2ASubagentsConfig,
    A2ASubagentsPlugin,
)

__all__ = [
    "A2A_PATH",
    "A2A_PROGRESS",
    "ANSWER",
    "CARD_PATH",
    "CHANGED",
    "A2AAgentSpec",
    "A2ADoor",
    "A2AProgress",
    "A2ASubagentsConfig",
    "A2ASubagentsPlugin",
    "DshExecutor",
    "SessionHost",
]
