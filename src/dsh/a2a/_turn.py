"""One A2A task's view of a dsh turn: the session's typed events become what the task says —
answer text as it streams, tool activity, a question for the person, the turn's end."""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from ..events import (
    ApprovalAskedEvent,
    AssistantMessageEvent,
    TextDeltaEvent,
    ToolCallEvent,
    ToolResultEvent,
    TurnEndEvent,
    TurnEndReason,
    TypedEvent,
    UserMessageEvent,
)
from ..llm import Json, parse_arguments
from ..plugins.ask_user import Answer, Question, QuestionError, check_answers, questions_of
from ..tools import Decision

__all__ = [
    "ApprovalAsk",
    "Delta",
    "End",
    "Progress",
    "QuestionAsk",
    "TurnView",
    "decision_of",
    "answers_of",
]

FILE_TOOLS = ("write", "edit")
ALLOW = frozenset({"y", "yes", "ok", "allow", "approve", "approved", "once"})
ALWAYS = frozenset({"always", "allow-always"})


class Delta(msgspec.Struct, frozen=True):
    """Answer text as it streams; `first` when it starts a step (the answer so far is
    replaced: the text of a step that went on to call tools was not the answer)."""

    text: str
    first: bool


class Progress(msgspec.Struct, frozen=True):
    """A tool call, for the person watching."""

    text: str
    data: dict[str, Json]


class ApprovalAsk(msgspec.Struct, frozen=True):
    call_id: str
    tool: str
    reason: str | None

    def text(self) -> str:
        why = f" ({self.reason})" if self.reason else ""
        return (
            f"dsh asks to run {self.tool}{why}. Reply yes, always (for this session), "
            "or no followed by a reason the model reads."
        )


class QuestionAsk(msgspec.Struct, frozen=True):
    call_id: str
    questions: tuple[Question, ...]

    def text(self) -> str:
        lines = ["The model asks (reply with one line per question: an option or your words;"]
        lines[0] += " reply decline to not answer):"
        for n, question in enumerate(self.questions, 1):
            lines.append(f"{n}. {question.question}")
            lines += [f"   - {o.label}: {o.description}" for o in question.options]
        return "\n".join(lines)


class End(msgspec.Struct, frozen=True):
    """The turn ended: its reason, the final answer, the files it changed."""

    reason: TurnEndReason
    answer: str
    changed: tuple[str, ...]


Outcome = Delta | Progress | ApprovalAsk | QuestionAsk | End


class TurnView:
    """Follows one session from the prompt `message_id` to the end of its turn (the events of
    an earlier turn, queued before it, are skipped)."""

    def __init__(self, message_id: str, *, after: int = -1) -> None:
        self.message_id = message_id
        self.started = False
        self.seen = after
        """The last seq seen: a continued task reads on after it."""
        self.asking: ApprovalAsk | QuestionAsk | None = None
        self._step: tuple[int, int] | None = None
        self._answer = ""
        self._paths: dict[str, str] = {}
        self._changed: list[str] = []

    def see(self, event: TypedEvent) -> Outcome | None:
        self.seen = max(self.seen, event.seq)
        if not self.started:
            self.started = isinstance(event, UserMessageEvent) and (
                event.message.id == self.message_id
            )
            return None
        match event:
            case TextDeltaEvent() if event.text:
                return self._delta(event)
            case AssistantMessageEvent(message=message) if not message.tool_calls:
                self._answer = message.text
            case ToolCallEvent():
                return self._call(event)
            case ToolResultEvent(call_id=call_id, error=None) if call_id in self._paths:
                path = self._paths.pop(call_id)
                if path not in self._changed:
                    self._changed.append(path)
            case ApprovalAskedEvent(call_id=call_id, tool=tool, reason=reason):
                self.asking = ApprovalAsk(call_id, tool, reason)
                return self.asking
            case TurnEndEvent(reason=reason):
                return End(reason, self._answer, tuple(self._changed))
        return None

    def _delta(self, event: TextDeltaEvent) -> Delta:
        step = (event.turn, event.step)
        first = step != self._step
        self._step = step
        return Delta(event.text, first)

    def _call(self, event: ToolCallEvent) -> Outcome | None:
        arguments = parse_arguments(event.arguments)
        path = arguments.get("file_path") if isinstance(arguments, dict) else None
        if event.name in FILE_TOOLS and isinstance(path, str):
            self._paths[event.call_id] = path
        if event.name == "ask_user_question" and isinstance(arguments, dict):
            try:
                self.asking = QuestionAsk(event.call_id, questions_of(arguments))
            except QuestionError:
                return None
            return self.asking
        data: dict[str, Json] = {"callId": event.call_id, "tool": event.name}
        data["arguments"] = arguments
        return Progress(f"{event.name} {_brief(arguments)}".strip(), data)


def _brief(arguments: Json, limit: int = 120) -> str:
    if isinstance(arguments, dict):
        for key in ("file_path", "path", "command", "pattern", "url", "description"):
            value = arguments.get(key)
            if isinstance(value, str):
                return value[:limit]
    return ""


def decision_of(reply: str) -> Decision:
    """A person's reply to an approval ask: yes (once), always, or else a denial whose reason
    is their words (a bare no gives none)."""
    words = reply.strip().split(maxsplit=1)
    first = words[0].lower().strip(".,!:") if words else ""
    if first in ALLOW:
        return Decision("once")
    if first in ALWAYS:
        return Decision("always")
    rest = words[1].strip() if first in ("n", "no", "deny", "reject") and len(words) > 1 else ""
    reason = rest if first in ("n", "no", "deny", "reject") else reply.strip()
    return Decision("deny", reason or None)


def answers_of(questions: Sequence[Question], reply: str) -> tuple[Answer, ...] | None:
    """A person's reply to the model's questions, one line per question: an option's label
    (several, comma-separated, for a multi-select question) or their own words; `decline`
    (or nothing) declines them all."""
    text = reply.strip()
    if not text or text.lower() == "decline":
        return None
    lines = text.splitlines() if len(questions) > 1 else [text]
    lines += [""] * (len(questions) - len(lines))
    answers = tuple(_answer(q, line.strip()) for q, line in zip(questions, lines, strict=False))
    try:
        check_answers(questions, answers)
    except QuestionError:
        return tuple(Answer(text=line.strip()) for line in lines[: len(questions)])
    return answers


def _answer(question: Question, line: str) -> Answer:
    labels = {o.label.lower(): o.label for o in question.options}
    picked = [p.strip() for p in line.split(",")] if question.multi_select else [line]
    chosen = tuple(labels[p.lower()] for p in picked if p.lower() in labels)
    if chosen and len(chosen) == len(picked):
        return Answer(selected=chosen)
    return Answer(text=line)
