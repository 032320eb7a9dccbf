"""Usage limits and the durable shape of a stop at one: a `hook` cancel whose reason names
the budget, so the log stays the reference runtime's (it has no `budget` turn end)."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec
from msgspec import Meta

from ...agent import CancelCause
from ...events import TurnEndReason
from ...kernel import ConfigRecord

__all__ = ["LIMIT_NAMES", "BudgetStop", "LimitName", "Scope", "UsageLimits", "budget_stop"]

LimitName = Literal["max-steps", "max-tool-calls", "max-tokens-in", "max-tokens-out", "max-cost"]
Scope = Literal["run", "session", "day"]

LIMIT_NAMES: tuple[LimitName, ...] = (
    "max-steps",
    "max-tool-calls",
    "max-tokens-in",
    "max-tokens-out",
    "max-cost",
)
_PREFIX = "budget:"


class UsageLimits(ConfigRecord):
    """Hard limits on what a run (or a session) may use; None is no limit.

    `max_steps` counts model requests (a step: Claude Code's and the OpenAI Agents SDK's
    "turns"), `max_tool_calls` tool calls started, `max_tokens_in` billed input (fresh, cache
    reads and writes), `max_tokens_out` output (reasoning included), `max_cost` US dollars by
    the usage plugin's prices."""

    aliases = {"max_turns": "max_steps"}  # noqa: RUF012 (a ClassVar of ConfigRecord)

    max_steps: Annotated[int, Meta(gt=0)] | None = None
    max_tool_calls: Annotated[int, Meta(ge=0)] | None = None
    max_tokens_in: Annotated[int, Meta(gt=0)] | None = None
    max_tokens_out: Annotated[int, Meta(gt=0)] | None = None
    max_cost: Annotated[float, Meta(gt=0)] | None = None

    def limits(self) -> tuple[tuple[LimitName, float], ...]:
        """The limits that are set, by name (`max-steps`, …)."""
        values = (
            self.max_steps,
            self.max_tool_calls,
            self.max_tokens_in,
            self.max_tokens_out,
            self.max_cost,
        )
        return tuple((n, v) for n, v in zip(LIMIT_NAMES, values, strict=True) if v is not None)

    def merged(self, other: UsageLimits | None) -> UsageLimits:
        """These limits with `other`'s set ones taking their place."""
        if other is None:
            return self
        changes = {f: v for f in other.__struct_fields__ if (v := getattr(other, f)) is not None}
        return msgspec.structs.replace(self, **changes)


class BudgetStop(msgspec.Struct, frozen=True):
    """A run stopped at a limit: `scope` `run`, `session` or `day`, the limit's `name` and
    value."""

    scope: Scope
    name: LimitName
    limit: float

    @property
    def cause(self) -> CancelCause:
        """The cancel that stops the turn: `hook` with reason
        `budget:<scope>:<name>=<limit>` (`budget:run:max-steps=10`)."""
        return CancelCause("hook", f"{_PREFIX}{self.scope}:{self.name}={_number(self.limit)}")

    def line(self) -> str:
        """One line for the user: `budget reached: max-steps 10 per run`."""
        value = f"${self.limit:g}" if self.name == "max-cost" else _number(self.limit)
        return f"budget reached: {self.name} {value} per {self.scope}"


def budget_stop(reason: TurnEndReason | CancelCause | None) -> BudgetStop | None:
    """The budget a turn stopped at, read back from its `turn/end` reason (or its cancel
    cause); None for any other end."""
    cause = reason.cause if isinstance(reason, TurnEndReason) else reason
    if cause is None or cause.kind != "hook" or not (cause.reason or "").startswith(_PREFIX):
        return None
    scope, _, rest = (cause.reason or "")[len(_PREFIX) :].partition(":")
    name, _, value = rest.partition("=")
    if scope not in ("run", "session", "day") or name not in LIMIT_NAMES:
        return None
    try:
        limit = float(value)
    except ValueError:
        return None
    return BudgetStop(scope, name, limit)  # type: ignore[arg-type]


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"
