"""What a hook's exit code and output mean, as Claude Code defines it.

- exit 0: stdout is context (`UserPromptSubmit`, `SessionStart`) or output shown to the
  person; stdout that is a JSON object is read as Claude Code's JSON output instead.
- exit 2: blocks where the point can block; stderr is the reason (JSON is ignored).
- any other exit, a timeout, a failure to start: a non-blocking error shown to the person.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Literal

import msgspec

from ...llm import Json
from ._config import Point
from ._runner import HookRun

__all__ = ["BLOCKING_POINTS", "CONTEXT_POINTS", "Decision", "HookOutcome", "decode"]

Decision = Literal["pass", "allow", "ask", "deny", "block"]

CONTEXT_POINTS: frozenset[str] = frozenset({"UserPromptSubmit", "SessionStart"})
"""Points whose plain stdout (exit 0) is context for the model."""
BLOCKING_POINTS: frozenset[str] = frozenset(
    {"UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop", "SubagentStop"}
)
"""Points an exit code 2 blocks; at the others it is an error shown to the person."""


class HookOutcome(msgspec.Struct, frozen=True):
    """One hook's answer. `reason` explains a block / deny / ask; `context` reaches the
    model; `output` and `error` are for the person; `stop` is `continue: false`."""

    decision: Decision = "pass"
    reason: str | None = None
    context: str | None = None
    updated_input: Mapping[str, Json] | None = None
    stop: bool = False
    stop_reason: str | None = None
    output: str | None = None
    error: str | None = None

    @property
    def recorded(self) -> str:
        """The `decision` of the durable `hook/result`."""
        return "stop" if self.stop else self.decision


def decode(point: Point, run: HookRun) -> HookOutcome:
    if run.failure is not None:
        return HookOutcome(error=_join(run.failure, run.stderr))
    if run.exit_code == 2 and point in BLOCKING_POINTS:
        return HookOutcome("block", reason=run.stderr.strip() or None)
    if run.exit_code != 0:
        return HookOutcome(error=_join(f"exit code {run.exit_code}", run.stderr))
    data = _json_object(run.stdout)
    if data is None:
        text = run.stdout.strip() or None
        return HookOutcome(context=text) if point in CONTEXT_POINTS else HookOutcome(output=text)
    return _from_json(point, data)


def _from_json(point: Point, data: Mapping[str, Any]) -> HookOutcome:
    specific = data.get("hookSpecificOutput")
    if not isinstance(specific, Mapping) or specific.get("hookEventName") != point:
        specific = {}  # another point's output is not this point's
    decision: Decision = "pass"
    legacy = data.get("decision")
    if legacy == "block":
        decision = "block"
    elif legacy == "approve" and point == "PreToolUse":
        decision = "allow"
    reason = _text(data.get("reason"))
    permission = specific.get("permissionDecision")
    if point == "PreToolUse" and permission in ("allow", "deny", "ask"):
        decision = permission
        reason = _text(specific.get("permissionDecisionReason")) or reason
    updated = specific.get("updatedInput") if point == "PreToolUse" else None
    return HookOutcome(
        decision,
        reason,
        _text(specific.get("additionalContext")),
        updated if isinstance(updated, Mapping) else None,
        data.get("continue") is False,
        _text(data.get("stopReason")),
        _text(data.get("systemMessage")),
    )


def _json_object(stdout: str) -> Mapping[str, Any] | None:
    text = stdout.strip()
    if not text.startswith("{"):
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return None  # not JSON after all: plain output
    return data if isinstance(data, dict) else None


def _text(value: object) -> str | None:
    return value.strip() or None if isinstance(value, str) else None


def _join(*parts: str) -> str:
    return ": ".join(p.strip() for p in parts if p.strip())
