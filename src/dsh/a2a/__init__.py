"""The A2A door (Agent2Agent, spec 1.0 with 0.3 compatibility, through the official a2a-sdk):
a remote agent or client drives dsh sessions — one context is one session — and reads their
turns as tasks. Served by `dsh a2a` and inside `dsh web`; needs the `a2a` extra."""

from ._door import A2A_PATH, CARD_PATH, A2ADoor
from ._executor import ANSWER, CHANGED, DshExecutor, SessionHost

__all__ = ["A2A_PATH", "ANSWER", "CARD_PATH", "CHANGED", "A2ADoor", "DshExecutor", "SessionHost"]
