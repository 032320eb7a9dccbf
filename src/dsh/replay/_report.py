"""Where a replay left the recorded trajectory: the first request whose body differs, and
every tool call or result that differs."""

from __future__ import annotations

import difflib
import json
from collections.abc import Sequence

import msgspec

from ..llm import Json
from ._views import RequestView, ToolView

__all__ = ["ReplayReport", "RequestDivergence", "ToolDivergence", "compare"]


class RequestDivergence(msgspec.Struct, frozen=True):
    """The first request today's code sent differently (or did not send, or sent beyond the
    recording): `parts` names the body's keys that differ (`answer`: the replay's model got
    another answer than the recorded one: a side call took it); `diff` is a unified diff of
    the two bodies, recorded first."""

    number: int
    turn: int
    step: int
    parts: tuple[str, ...]
    diff: str


class ToolDivergence(msgspec.Struct, frozen=True):
    """A tool call whose name or arguments (`call`) or result (`result`) differ, or one only
    one side made (`missing`: recorded only; `extra`: replayed only)."""

    number: int
    call_id: str
    name: str
    what: str
    diff: str


class ReplayReport(msgspec.Struct, frozen=True):
    """The outcome of replaying one session. `identical` when every request body and every
    tool call and result matched the recording."""

    session_id: str
    source: str
    tools: str
    recorded_requests: int
    replayed_requests: int
    request: RequestDivergence | None = None
    tool_calls: tuple[ToolDivergence, ...] = ()
    not_reproduced: tuple[str, ...] = ()
    """Parts of the recording the replay could not do again (a rewind's part): said, not
    counted as a divergence."""

    @property
    def identical(self) -> bool:
        return self.request is None and not self.tool_calls

    def summary(self) -> str:
        """One line: the session and where it diverged."""
        plural = "" if self.recorded_requests == 1 else "s"
        head = f"{self.session_id}: {self.recorded_requests} request{plural} recorded"
        missing = (
            "; not reproduced: " + "; ".join(self.not_reproduced) if self.not_reproduced else ""
        )
        if self.identical:
            return f"{head}, replayed identically (tools {self.tools}){missing}"
        return f"{head}, diverged at {self.first_divergence()} (tools {self.tools}){missing}"

    def first_divergence(self) -> str:
        """`request 3 (system, tools)`, `tool call 2 result`, or `-`."""
        if self.request is not None:
            return f"request {self.request.number} ({', '.join(self.request.parts)})"
        if self.tool_calls:
            first = self.tool_calls[0]
            return f"tool call {first.number} ({first.name}) {first.what}"
        return "-"

    def render(self) -> str:
        """The summary, then the request diff and each tool divergence."""
        lines = [self.summary()]
        if self.request is not None:
            where = f"turn {self.request.turn}, step {self.request.step}"
            lines += [f"request {self.request.number} ({where}) differs:", self.request.diff]
            if {"system", "tools"} & set(self.request.parts):
                lines.append(
                    "(the system prompt or the tools differ: a session that ran with --profile "
                    "replays with the same --profile; the workspace is read as it is now)"
                )
        for tool in self.tool_calls:
            lines.append(f"tool call {tool.number} {tool.call_id} ({tool.name}): {tool.what}")
            if tool.diff:
                lines.append(tool.diff)
        return "\n".join(line.rstrip("\n") for line in lines)

    def assert_identical(self) -> None:
        """Raise `AssertionError` with `render()` unless the replay matched the recording."""
        if not self.identical:
            raise AssertionError(self.render())


def compare(
    recorded: Sequence[RequestView],
    replayed: Sequence[RequestView],
    recorded_tools: Sequence[ToolView],
    replayed_tools: Sequence[ToolView],
) -> tuple[RequestDivergence | None, tuple[ToolDivergence, ...]]:
    return _first_request(recorded, replayed), _tools(recorded_tools, replayed_tools)


def _first_request(
    recorded: Sequence[RequestView], replayed: Sequence[RequestView]
) -> RequestDivergence | None:
    for index in range(max(len(recorded), len(replayed))):
        old = recorded[index] if index < len(recorded) else None
        new = replayed[index] if index < len(replayed) else None
        old_body = None if old is None else {**old.body, "answer": old.answer}
        new_body = None if new is None else {**new.body, "answer": new.answer}
        if old_body == new_body:
            continue
        parts = _differing_keys(old_body, new_body)
        shown = old or new
        assert shown is not None
        label = f"request {index + 1}"
        diff = _diff(_lines(old_body), _lines(new_body), label)
        return RequestDivergence(index + 1, shown.turn, shown.step, parts, diff)
    return None


def _differing_keys(old: dict[str, Json] | None, new: dict[str, Json] | None) -> tuple[str, ...]:
    if old is None:
        return ("not recorded: today's code made one more request",)
    if new is None:
        return ("not made today",)
    return tuple(k for k in dict.fromkeys([*old, *new]) if old.get(k) != new.get(k))


def _tools(
    recorded: Sequence[ToolView], replayed: Sequence[ToolView]
) -> tuple[ToolDivergence, ...]:
    out: list[ToolDivergence] = []
    for index in range(max(len(recorded), len(replayed))):
        old = recorded[index] if index < len(recorded) else None
        new = replayed[index] if index < len(replayed) else None
        if old is None or new is None:
            shown = old or new
            assert shown is not None
            what = "missing" if new is None else "extra"
            out.append(ToolDivergence(index + 1, shown.call_id, shown.name, what, ""))
        elif (old.name, old.arguments) != (new.name, new.arguments):
            diff = _diff([old.name, old.arguments], [new.name, new.arguments], "tool call")
            out.append(ToolDivergence(index + 1, old.call_id, old.name, "call", diff))
        elif old.result != new.result:
            diff = _diff(_json_lines(old.result), _json_lines(new.result), "tool result")
            out.append(ToolDivergence(index + 1, old.call_id, old.name, "result", diff))
    return tuple(out)


def _lines(body: dict[str, Json] | None) -> list[str]:
    """A request body as lines a diff can point into: the system prompt line by line, the
    rest as indented JSON (a tool's description or a message's text on its own line)."""
    if body is None:
        return []
    lines: list[str] = []
    for key, value in body.items():
        lines.append(f"{key}:")
        if isinstance(value, str):
            lines.extend(f"  {line}" for line in value.splitlines())
        else:
            lines.extend(f"  {line}" for line in _json_lines(value))
    return lines


def _json_lines(value: Json) -> list[str]:
    text = json.dumps(value, indent=2, ensure_ascii=False)
    out: list[str] = []
    for line in text.splitlines():  # a long text with newlines: one diff line per line of it
        head, sep, rest = line.partition(': "')
        if sep and "\\n" in rest:
            out.append(f'{head}: "')
            out.extend(f"    {part}" for part in rest.split("\\n"))
        else:
            out.append(line)
    return out


def _diff(old: list[str], new: list[str], label: str) -> str:
    return "\n".join(
        difflib.unified_diff(old, new, f"recorded {label}", f"replayed {label}", n=2, lineterm="")
    )
