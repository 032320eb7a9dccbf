"""Session events as a person reads them, on any `Surface`: answers printed once and for good
(as Markdown when the surface wants it), reasoning dimmed and folded to one line, tool calls
and results in log order, and a status line for what is happening now."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from ..llm import Message, ReasoningBlock, TextBlock, text_of
from ..session import usage_of
from ._blocks import StreamedText
from ._format import call_summary, describe_end, preview, result_summary, usage_line

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..session import SessionEvent, Usage

LIVE_LINES = 8
"""How much of the block being written the live area shows (its tail)."""
REASONING_PREVIEW = 72
USAGE_EVENTS = ("assistant/message", "tool/call", "compaction/summary")
"""What `usage_of` reads."""


class Surface(Protocol):
    """Where a renderer's output goes: the chat screen, a terminal, or pipes."""

    def answer(self, text: str) -> None:
        """Print final answer text (whole Markdown blocks, or whole lines when plain)."""

    def note(self, text: str, style: str = "") -> None:
        """Print one transcript item (a tool call, a result line, an outcome)."""

    def live(self, text: str, style: str = "") -> None:
        """Show the part still being written ("" clears it); it is replaced, never kept."""

    def status(self, text: str | None, *, keep: bool = False) -> None:
        """Show what is happening now (None clears). `keep`: worth a line of its own where
        nothing can be updated in place (a retry on a pipe)."""


class Renderer:
    """Turns one session's events into surface calls, in order, each shown once."""

    def __init__(
        self,
        surface: Surface,
        *,
        markdown: bool,
        echo_prompts: bool = False,
        outcomes: bool = True,
        reasoning: bool = False,
        cost: Callable[[Usage], float | None] | None = None,
    ) -> None:
        self.surface = surface
        self.markdown = markdown
        """Cut answers at Markdown blocks (the surface renders them) rather than at lines."""
        self.echo_prompts = echo_prompts
        """Print the user's prompts as they enter the log (chat: the input line is erased)."""
        self.outcomes = outcomes
        """Print how a turn ended when it did not complete."""
        self.reasoning = reasoning
        """Print reasoning in full (dimmed) instead of one folded line."""
        self.cost = cost
        self.calls: dict[str, str] = {}
        """Tool name by call id (a result names only its call)."""
        self._text: StreamedText | None = None
        self._thought: str | None = None
        self._step: tuple[int, int] | None = None
        self._turn: list[SessionEvent] = []
        """The current turn's events that count for its usage line."""

    # -- dispatch ------------------------------------------------------------------------------

    def event(self, event: SessionEvent) -> None:
        if event.type in USAGE_EVENTS:
            self._turn.append(event)
        handler = getattr(self, "_" + event.type.replace("/", "_").replace("-", "_"), None)
        if handler is not None:
            handler(event)

    def replay(self, events: list[SessionEvent]) -> None:
        """Print stored events (a resumed session's last turns): whole messages, no chunks."""
        for event in events:
            if event.type != "assistant/chunk":
                self.event(event)
        self.surface.status(None)

    # -- the turn ------------------------------------------------------------------------------

    def _user_message(self, event: SessionEvent) -> None:
        message = Message.from_json(event.data)
        source = message.source
        if self.echo_prompts and source.get("kind") == "user":
            self.surface.note(f"> {message.text}", "bold")
        elif source.get("kind") == "plugin" and source.get("form") == "notice":
            # Background work reporting (a subagent's answer, a job's end): the agent may
            # start a turn on it with nobody typing, so the person sees why.
            first = message.text.strip().split("\n", 1)[0].rstrip(":")
            self.surface.note(f"◆ {first}", "blue")

    def _turn_start(self, event: SessionEvent) -> None:
        self._turn = []
        self.surface.status("thinking…")

    def _step_start(self, event: SessionEvent) -> None:
        self.surface.status("thinking…")

    def _assistant_chunk(self, event: SessionEvent) -> None:
        data = event.data
        self._step = (data["turn"], data["step"])
        chunk = data["chunk"]
        kind = chunk["type"]
        if kind == "text-delta":
            self._stream_text(chunk["text"])
        elif kind == "reasoning-delta":
            self._thought = (self._thought or "") + chunk["text"]
            self.surface.status("thinking…")
            self.surface.live(_tail(self._thought), "dim italic")
        elif kind == "tool-call-delta" and chunk.get("name"):
            self.surface.status(f"preparing {chunk['name']}…")
        elif kind in ("block-end", "finish"):
            self._close_blocks()

    def _stream_text(self, delta: str) -> None:
        if self._text is None:
            self._close_blocks()
            self._text = StreamedText(markdown=self.markdown)
            self.surface.status("writing…")
        self._text.feed(delta)
        final = self._text.take_final()
        if final.strip() or (final and not self.markdown):  # plain text keeps blank lines
            self.surface.answer(final)
        self.surface.live(_tail(self._text.open))

    def _close_blocks(self) -> None:
        if self._thought is not None:
            self._print_reasoning(self._thought)
            self._thought = None
        if self._text is not None:
            rest = self._text.take_rest()
            if rest.strip():
                self.surface.answer(rest.rstrip("\n") + "\n")
            self._text = None
        self.surface.live("")

    def _print_reasoning(self, text: str) -> None:
        text = text.strip()
        if not text:
            return
        if self.reasoning:
            self.surface.note(text, "dim italic")
            return
        first = " ".join(text.split())
        if len(first) > REASONING_PREVIEW:
            first = first[: REASONING_PREVIEW - 1] + "…"
        lines = text.count("\n") + 1
        self.surface.note(f"∴ {first} ({lines} line{'s' if lines != 1 else ''} of thinking)", "dim")

    def _assistant_message(self, event: SessionEvent) -> None:
        step = (event.data.get("turn"), event.data.get("step"))
        if step == self._step:
            return  # its chunks were shown as they arrived
        for block in Message.from_json(event.data["message"]).content:
            if isinstance(block, ReasoningBlock):
                self._print_reasoning(block.text)
            elif isinstance(block, TextBlock) and block.text.strip():
                self.surface.answer(block.text.rstrip("\n") + "\n")

    # -- tools ---------------------------------------------------------------------------------

    def _tool_call(self, event: SessionEvent) -> None:
        data = event.data
        self.calls[data["callId"]] = data["name"]
        self._close_blocks()
        self.surface.note(f"● {call_summary(data['name'], data['arguments'])}", "cyan")
        self.surface.status(f"running {data['name']}…")

    def _approval_asked(self, event: SessionEvent) -> None:
        self.surface.status(None)

    def _approval_decided(self, event: SessionEvent) -> None:
        data = event.data
        if data.get("by") != "answerer":
            return  # nobody was asked: the tool result says what happened
        decision = data.get("decision")
        words = {"once": "allowed once", "always": "allowed for this session"}
        if decision in words:
            self.surface.note(f"  ✓ {words[decision]}", "green")
        else:
            reason = data.get("reason")
            self.surface.note("  ✗ denied" + (f": {reason}" if reason else ""), "red")

    def _tool_result(self, event: SessionEvent) -> None:
        if event.surface_op != "append":
            return  # a pruned copy of an old result (compaction/prune says so)
        block: Any = Message.from_json(event.data["message"]).content[0]
        text = text_of(getattr(block, "content", ()))
        failed = bool(getattr(block, "is_error", False))
        name = self.calls.pop(getattr(block, "tool_call_id", ""), "")
        lines = result_summary(text, tool=None if failed else name)
        for i, line in enumerate(lines):
            self.surface.note(("  ⎿ " if i == 0 else "    ") + line, "red" if failed else "dim")
        self.surface.status("thinking…")

    # -- everything else -----------------------------------------------------------------------

    def _llm_retry(self, event: SessionEvent) -> None:
        data = event.data
        failure = data.get("failure", {})
        of = f"/{data['maxRetries']}" if "maxRetries" in data else ""
        what = _without_provider(str(failure.get("message") or failure.get("code", "error")))
        seconds = data.get("delayMs", 0) / 1000
        self.surface.status(
            f"↻ retry {data.get('retry')}{of} in {seconds:.1f} s: {what}", keep=True
        )

    def _hook_result(self, event: SessionEvent) -> None:
        """A hook that blocked, failed or has something to say (`hook/result`)."""
        data = event.data
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
        self._close_blocks()
        self.surface.note(f"⚑ {preview(line.rstrip(': '), 160)}", style)

    def _compaction_summary(self, event: SessionEvent) -> None:
        count = len(event.data.get("shadowedSeqs", ()))
        self.surface.note(f"⇣ compacted {count} earlier messages into a summary", "dim")

    def _compaction_prune(self, event: SessionEvent) -> None:
        count = len(event.data.get("shadowedSeqs", ()))
        self.surface.note(f"⇣ pruned {count} old tool result{'s' if count != 1 else ''}", "dim")

    def _plan_mode(self, event: SessionEvent) -> None:
        active = event.data.get("active")
        self.surface.note("◇ plan mode on" if active else "◇ plan mode off", "magenta")

    def _turn_end(self, event: SessionEvent) -> None:
        self._close_blocks()
        self.surface.status(None)
        self._step = None
        reason = event.data["reason"]
        if self.outcomes and reason.get("kind") != "completed":
            self.surface.note(f"✗ {describe_end(reason)}", "red")
        usage = usage_of(self._turn)
        self._turn = []
        line = usage_line(usage, self.cost(usage) if self.cost else None)
        if line is not None:
            self.surface.note(line, "dim")

    def close(self) -> None:
        self._close_blocks()
        self.surface.status(None)


def _tail(text: str) -> str:
    if text.count("\n") < LIVE_LINES:
        return text
    return "\n".join(text.split("\n")[-LIVE_LINES:])


def _without_provider(message: str) -> str:
    """`deepseek-official: connection refused (…)` → `connection refused (…)`."""
    head, sep, rest = message.partition(": ")
    return rest if sep and " " not in head else message
