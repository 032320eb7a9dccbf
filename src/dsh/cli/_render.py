"""Session events as a person reads them, on any `Surface`: answers printed once and for good
(as Markdown when the surface wants it), reasoning dimmed and folded to one line, tool calls
and results in log order, and a status line for what is happening now."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Protocol

from ..events import (
    ASSISTANT_CHUNK,
    ApprovalAskedEvent,
    ApprovalDecidedEvent,
    AssistantMessageEvent,
    BlockEndEvent,
    CompactionPruneEvent,
    CompactionSummaryEvent,
    FinishEvent,
    HookResultEvent,
    ModelSwitchEvent,
    PlanModeEvent,
    ReasoningDeltaEvent,
    RetryEvent,
    StepStartEvent,
    TextDeltaEvent,
    ToolCallDeltaEvent,
    ToolCallEvent,
    ToolProgressEvent,
    ToolResultEvent,
    TurnEndEvent,
    TurnStartEvent,
    TypedEvent,
    UserMessageEvent,
    typed,
)
from ..llm import ReasoningBlock, TextBlock
from ..session import Usage, usage_by_model
from ._blocks import StreamedText
from ._format import (
    TAIL_KEEP,
    call_summary,
    describe_end,
    output_tail,
    preview,
    result_summary,
    usage_line,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from ..session import ModelRoute, SessionEvent

LIVE_LINES = 8
"""How much of the block being written the live area shows (its tail)."""
REASONING_PREVIEW = 72
USAGE_EVENTS = (AssistantMessageEvent.type, ToolCallEvent.type, CompactionSummaryEvent.type)
"""What `usage_of` reads."""


class Surface(Protocol):
    """Where a renderer's output goes: the chat screen, a terminal, or pipes."""

    def answer(self, text: str) -> None:
        """Print final answer text (whole Markdown blocks, or whole lines when plain)."""

    def note(self, text: str, style: str = "") -> None:
        """Print one transcript item (a tool call, a result line, an outcome)."""

    def live(self, text: str, style: str = "") -> None:
        """Show the part still being written ("" clears it); it is replaced, never kept."""

    def status(self, text: str | None, *, keep: bool = False, since: float | None = None) -> None:
        """Show what is happening now (None clears). `keep`: worth a line of its own where
        nothing can be updated in place (a retry on a pipe). `since` (a `time.monotonic()`):
        show, after the text, the time since then, counting while it is shown."""


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
        cost: Callable[[Mapping[ModelRoute, Usage]], float | None] | None = None,
        session_cost: Callable[[], float | None] | None = None,
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
        """Prices a turn's usage by route (each turn line shows its cost)…"""
        self.session_cost = session_cost
        """…and the session's so far (shown beside it)."""
        self.calls: dict[str, str] = {}
        """Tool name by call id (a result names only its call)."""
        self._shown: dict[str, str] = {}
        """Each running call's line, to label its result when others were drawn between."""
        self._latest: str | None = None
        """The call whose line was drawn last, while nothing came after it."""
        self._text: StreamedText | None = None
        self._thought: str | None = None
        self._step: tuple[int, int] | None = None
        self._turn: list[SessionEvent] = []
        """The current turn's events that count for its usage line."""
        self._tails: dict[str, str] = {}
        """The end of each running call's output (by call id)."""
        self._started: dict[str, float] = {}
        """When each running call was shown (`time.monotonic()`, by call id)."""

    # -- dispatch ------------------------------------------------------------------------------

    def event(self, event: SessionEvent) -> None:
        if event.type in USAGE_EVENTS:
            self._turn.append(event)
        self.show(typed(event))

    def show(self, event: TypedEvent) -> None:
        """What one event puts on the screen (most events put nothing)."""
        match event:
            case UserMessageEvent():
                self._user_message(event)
            case TurnStartEvent():
                self._turn = []
                self.surface.status("thinking…")
            case StepStartEvent():
                self.surface.status("thinking…")
            case TextDeltaEvent():
                self._step = (event.turn, event.step)
                self._stream_text(event.text)
            case ReasoningDeltaEvent():
                self._step = (event.turn, event.step)
                self._thought = (self._thought or "") + event.text
                self.surface.status("thinking…")
                self.surface.live(_tail(self._thought), "dim italic")
            case ToolCallDeltaEvent():
                self._step = (event.turn, event.step)
                if event.name:
                    self.surface.status(f"preparing {event.name}…")
            case BlockEndEvent() | FinishEvent():
                self._step = (event.turn, event.step)
                self._close_blocks()
            case AssistantMessageEvent():
                self._assistant_message(event)
            case ToolCallEvent():
                self._tool_call(event)
            case ApprovalAskedEvent():
                self.surface.status(None)
            case ApprovalDecidedEvent():
                self._approval_decided(event)
            case ToolResultEvent():
                self._tool_result(event)
            case RetryEvent():
                self._llm_retry(event)
            case HookResultEvent():
                self._hook_result(event)
            case ModelSwitchEvent(fallback=str(why)):
                was = f"{event.previous_provider}:{event.previous_model}"
                now = f"{event.provider}:{event.model}"
                self.surface.note(f"⇢ {was} failed ({_without_provider(why)}): now {now}", "yellow")
            case CompactionSummaryEvent():
                self.surface.note(f"⇣ compacted into a summary: {event.receipt()}", "dim")
            case CompactionPruneEvent():
                count = len(event.shadowed_seqs)
                plural = "s" if count != 1 else ""
                self.surface.note(f"⇣ pruned {count} old tool result{plural}", "dim")
            case PlanModeEvent():
                self.surface.note(f"◇ plan mode {'on' if event.active else 'off'}", "magenta")
            case TurnEndEvent():
                self._turn_end(event)
            case _:
                pass

    def progress(self, event: ToolProgressEvent) -> None:
        """A running call's progress: the last lines of its output live under the call, and
        how long it has run (folded when its result arrives)."""
        if event.call_id not in self.calls:
            return  # not a call of this transcript (or already ended)
        kept = (self._tails.get(event.call_id, "") + event.output)[-TAIL_KEEP:]
        self._tails[event.call_id] = kept
        tail = output_tail(kept)
        status = f"running {event.name}…"
        if event.message:
            status += f" {preview(event.message, 80)}"
        if event.fraction is not None:
            status += f" ({event.fraction:.0%})"
        self.surface.status(status, since=self._started.get(event.call_id))
        if tail:
            self.surface.live("\n".join(f"  │ {line}" for line in tail.split("\n")), "dim")

    def replay(self, events: list[SessionEvent]) -> None:
        """Print stored events (a resumed session's last turns): whole messages, no chunks."""
        for event in events:
            if event.type != ASSISTANT_CHUNK:
                self.event(event)
        self.surface.status(None)

    # -- the turn ------------------------------------------------------------------------------

    def _user_message(self, event: UserMessageEvent) -> None:
        message = event.message
        source = message.source
        if self.echo_prompts and source.get("kind") == "user":
            self.surface.note(f"> {message.text}", "bold")
        elif source.get("kind") == "plugin" and source.get("form") == "notice":
            # Background work reporting (a subagent's answer, a job's end): the agent may
            # start a turn on it with nobody typing, so the person sees why.
            first = message.text.strip().split("\n", 1)[0].rstrip(":")
            self.surface.note(f"◆ {first}", "blue")

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

    def _assistant_message(self, event: AssistantMessageEvent) -> None:
        if (event.turn, event.step) == self._step:
            return  # its chunks were shown as they arrived
        for block in event.message.content:
            if isinstance(block, ReasoningBlock):
                self._print_reasoning(block.text)
            elif isinstance(block, TextBlock) and block.text.strip():
                self.surface.answer(block.text.rstrip("\n") + "\n")

    # -- tools ---------------------------------------------------------------------------------

    def _tool_call(self, event: ToolCallEvent) -> None:
        self.calls[event.call_id] = event.name
        self._close_blocks()
        shown = self._shown[event.call_id] = call_summary(event.name, event.arguments)
        self.surface.note(f"● {shown}", "cyan")
        self._latest = event.call_id
        self._started[event.call_id] = started = time.monotonic()
        self.surface.status(f"running {event.name}…", since=started)

    def _approval_decided(self, event: ApprovalDecidedEvent) -> None:
        if event.by != "answerer":
            return  # nobody was asked: the tool result says what happened
        words = {"once": "allowed once", "always": "allowed for this session"}
        if event.decision in words:
            self.surface.note(f"  ✓ {words[event.decision]}", "green")
        else:
            reason = event.reason
            self.surface.note("  ✗ denied" + (f": {reason}" if reason else ""), "red")

    def _tool_result(self, event: ToolResultEvent) -> None:
        if event.surface_op != "append":
            return  # a pruned copy of an old result (compaction/prune says so)
        text, failed = event.text, event.is_error
        name = self.calls.pop(event.call_id, "")
        shown = self._shown.pop(event.call_id, name)
        self._started.pop(event.call_id, None)
        if self._tails.pop(event.call_id, None) is not None:
            self.surface.live("")  # the live tail folds: the result line says how it went
        lines = result_summary(text, tool=None if failed else name)
        if event.call_id != self._latest:  # not right under its call: say whose it is
            lines[0] = f"{preview(shown, 60)}: {lines[0]}"
        self._latest = None
        for i, line in enumerate(lines):
            self.surface.note(("  ⎿ " if i == 0 else "    ") + line, "red" if failed else "dim")
        self.surface.status("thinking…")

    # -- everything else -----------------------------------------------------------------------

    def _llm_retry(self, event: RetryEvent) -> None:
        failure = event.failure
        of = f"/{event.max_retries}" if event.max_retries is not None else ""
        what = _without_provider(failure.message or failure.code or "error")
        seconds = event.delay_ms / 1000
        self.surface.status(f"↻ retry {event.retry}{of} in {seconds:.1f} s: {what}", keep=True)

    def _hook_result(self, event: HookResultEvent) -> None:
        """A hook that blocked, failed or has something to say (`hook/result`)."""
        point, decision = event.point, event.decision
        failed = event.exit_code not in (0, 2)
        verbs = {"block": "blocked", "deny": "denied", "ask": "asks", "stop": "stopped the turn"}
        if isinstance(decision, str) and decision in verbs:
            line, style = f"{point} hook {verbs[decision]}: {event.reason or ''}", "yellow"
        elif failed and event.stderr_summary:
            line, style = f"{point} hook failed: {event.stderr_summary}", "red"
        elif event.output:
            line, style = f"{point} hook: {event.output}", "dim"
        else:
            return
        self._close_blocks()
        self.surface.note(f"⚑ {preview(line.rstrip(': '), 160)}", style)

    def _turn_end(self, event: TurnEndEvent) -> None:
        self._close_blocks()
        self.surface.status(None)
        self._step = None
        if self.outcomes and event.reason.kind != "completed":
            self.surface.note(f"✗ {describe_end(event.reason)}", "red")
        by_model = usage_by_model(self._turn)
        self._turn = []
        usage = sum(by_model.values(), Usage())
        cost = self.cost(by_model) if self.cost else None
        session = self.session_cost() if self.session_cost and cost is not None else None
        line = usage_line(usage, cost, session)
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
