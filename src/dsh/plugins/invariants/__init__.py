"""Opt-in runtime invariants: log relations, status transitions, request reconstruction."""

from ._checks import LogState, check_event
from ._plugin import (
    INVARIANT_VIOLATION,
    INVARIANTS,
    Invariants,
    InvariantsPlugin,
    Violation,
    reconstruct,
)

__all__ = [
    "INVARIANTS",
    "INVARIANT_VIOLATION",
    "Invariants",
    "InvariantsPlugin",
    "LogState",
    "Violation",
    "check_event",
    "reconstruct",
]
