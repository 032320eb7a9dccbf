"""Session events as a person reads them: streamed text, tool activity, the outcome."""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from ..llm import Message, text_of

if TYPE_CHECKING:
    from rich.console import Console
    from rich.status import Status

    from ..session import SessionEvent

PREVIEW = 80
_NUMBERED = re.compile(r"^\d+: ")
RESULT_LINES = 3


def _preview(text: str, width: int = PREVIEW) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def call_summary(name: str, raw_arguments: str) -> str:
    """`name(key=value, …)` with long values shortened."""
    try:
        args = json.loads(raw_arguments) if raw_arguments.strip() else {}
    except ValueError:
        return f"{name}({_preview(raw_arguments, 60)})"
    if not isinstance(args, dict):
        return f"{name}({_preview(json.dumps(args), 60)})"
    parts = [f"{k}={_preview(json.dumps(v, ensure_ascii=False), 40)}" for k, v in args.items()]
    return f"{name}({', '.join(parts)})"


def result_summary(text: str, lines: int = RESULT_LINES, *, tool: str | None = None) -> list[str]:
    """The first lines of a tool result, and how many more were collapsed (a `read` result
    is summarised by the lines it returned)."""
    if tool == "read":
        numbered = sum(1 for row in text.splitlines() if _NUMBERED.match(row))
        return [f"read {numbered} line{'s' if numbered != 1 else ''}"]
    rows = text.splitlines() or [""]
    shown = [_preview(r, 100) for r in rows[:lines]]
    if len(rows) > lines:
        shown.append(f"… ({len(rows) - lines} more lines)")
    return shown


class TerminalRenderer:
    """Prints assistant text to `out` as it streams; tool activity and status to `err`."""

    def __init__(self, out: Console, err: Console, *, reasoning: bool = True) -> None:
        self.out = out
        self.err = err
        self.reasoning = reasoning
        self.status: Status | None = None
        self.open_block: str | None = None
        self.calls: dict[str, str] = {}
        """Tool name by call id (a result names only its call)."""

    def waiting(self, text: str = "thinking…") -> None:
        if self.status is None and self.err.is_terminal:
            self.status = self.err.status(text, spinner="dots")
            self.status.start()

    def _stop_waiting(self) -> None:
        if self.status is not None:
            self.status.stop()
            self.status = None

    def _end_block(self) -> None:
        if self.open_block is not None:
            (self.out if self.open_block == "text" else self.err).print()
            self.open_block = None

    def event(self, event: SessionEvent) -> None:
        handler = getattr(self, "_" + event.type.replace("/", "_").replace("-", "_"), None)
        if handler is not None:
            handler(event.data)

    def _assistant_chunk(self, data: Any) -> None:
        chunk = data["chunk"]
        kind = chunk["type"]
        if kind == "text-delta":
            self._stop_waiting()
            if self.open_block not in (None, "text"):
                self._end_block()
            self.open_block = "text"
            self.out.print(chunk["text"], end="", markup=False, highlight=False, soft_wrap=True)
        elif kind == "reasoning-delta" and self.reasoning:
            self._stop_waiting()
            if self.open_block not in (None, "reasoning"):
                self._end_block()
            self.open_block = "reasoning"
            self.err.print(
                chunk["text"], end="", style="dim", markup=False, highlight=False, soft_wrap=True
            )
        elif kind == "finish":
            self._end_block()

    def _step_start(self, data: Any) -> None:
        self.waiting()

    def _tool_call(self, data: Any) -> None:
        self.calls[data["callId"]] = data["name"]
        self._stop_waiting()
        self._end_block()
        self.err.print(
            f"● {call_summary(data['name'], data['arguments'])}",
            style="cyan",
            markup=False,
            highlight=False,
        )
        self.waiting(f"running {data['name']}…")

    def _tool_result(self, data: Any) -> None:
        self._stop_waiting()
        message = Message.from_json(data["message"])
        block = message.content[0]
        text = text_of(getattr(block, "content", ()))
        failed = bool(getattr(block, "is_error", False))
        name = self.calls.pop(getattr(block, "tool_call_id", ""), "")
        for i, line in enumerate(result_summary(text, tool=None if failed else name)):
            prefix = "  ⎿ " if i == 0 else "    "
            self.err.print(
                prefix + line, style="red" if failed else "dim", markup=False, highlight=False
            )

    def _llm_retry(self, data: Any) -> None:
        failure = data.get("failure", {})
        seconds = data.get("delayMs", 0) / 1000
        # The failure's message says what went wrong, e.g. what a timeout was waiting for.
        self.err.print(
            f"↻ {failure.get('code', 'error')}: {failure.get('message', '')}; retrying in "
            f"{seconds:.1f}s (attempt {data.get('retry')})",
            style="yellow",
            markup=False,
            highlight=False,
        )

    def _compaction_summary(self, data: Any) -> None:
        count = len(data.get("shadowedSeqs", ()))
        self.err.print(f"⇣ compacted {count} earlier messages", style="dim", markup=False)

    def _hook_result(self, data: Any) -> None:
        """A hook that blocked, failed or has something to say (`hook/result`)."""
        point, decision = data.get("point", "hook"), data.get("decision")
        failed = "exitCode" not in data or data["exitCode"] not in (0, 2)
        verbs = {"block": "blocked", "deny": "denied", "ask": "asks", "stop": "stopped the turn"}
        if decision in verbs:
            line, style = f"{point} hook {verbs[decision]}: {data.get('reason', '')}", "yellow"
        elif failed and data.get("stderrSummary"):
            line, style = f"{point} hook failed: {data['stderrSummary']}", "red"
        elif data.get("output"):
            line, style = f"{point} hook: {data['output']}", "dim"
        else:
            return
        self._stop_waiting()
        self._end_block()
        self.err.print(f"⚑ {_preview(line.rstrip(': '), 160)}", style=style, markup=False)

    def _approval_asked(self, data: Any) -> None:
        self._stop_waiting()

    def _turn_end(self, data: Any) -> None:
        self._stop_waiting()
        self._end_block()

    def close(self) -> None:
        self._stop_waiting()
        self._end_block()


def describe_end(reason: Any) -> str:
    """One line for a `turn/end` reason."""
    kind = reason.get("kind", "unknown")
    if kind == "error":
        error = reason.get("error", {})
        return f"error: {error.get('code', 'UNKNOWN')}: {error.get('message', '')}"
    if kind == "aborted":
        cause = reason.get("reason", {})
        return f"cancelled ({cause.get('kind', 'user')})"
    return str(kind)
