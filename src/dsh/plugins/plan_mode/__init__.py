"""Plan mode: only reading and searching tools run until the user approves the plan the
model presents with `exit_plan_mode`; the mode is logged (`plan/mode`) and survives resume."""

from ._plugin import (
    APPROVED,
    CONTEXT,
    EVENT,
    PLAN_MODE,
    READ_ONLY,
    PlanMode,
    PlanModeConfig,
    PlanModePlugin,
    exit_plan_mode,
)

__all__ = [
    "APPROVED",
    "CONTEXT",
    "EVENT",
    "PLAN_MODE",
    "READ_ONLY",
    "PlanMode",
    "PlanModeConfig",
    "PlanModePlugin",
    "exit_plan_mode",
]
