"""`UserQuestions` (`ctx.get(QUESTIONS)`): the model's questions go to whoever answers them
for this runtime — the terminal in `dsh chat`, a JSON-RPC client, later ACP and the web UI."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, TypeAlias

import msgspec

from ...kernel import CancelSignal, Disposer, ServiceKey
from ...llm import HarnessError, Json
from ...tools import Answerers

if TYPE_CHECKING:
    from ..._context import Context

__all__ = [
    "QUESTIONS",
    "Answer",
    "NoPersonError",
    "Option",
    "Question",
    "QuestionAnswerer",
    "QuestionError",
    "QuestionRequest",
    "UserQuestions",
    "check_answers",
]


class Option(msgspec.Struct, frozen=True):
    label: str
    description: str = ""


class Question(msgspec.Struct, frozen=True):
    """One question; with no options the person answers in words. They may always write
    something else than the options."""

    question: str
    header: str = ""
    options: tuple[Option, ...] = ()
    multi_select: bool = False

    def to_json(self) -> dict[str, Json]:
        """The wire shape (camelCase, as the JSON-RPC protocol writes it)."""
        return {
            "question": self.question,
            "header": self.header,
            "options": [{"label": o.label, "description": o.description} for o in self.options],
            "multiSelect": self.multi_select,
        }


class Answer(msgspec.Struct, frozen=True):
    """The labels the person chose, and what they wrote (either may be empty)."""

    selected: tuple[str, ...] = ()
    text: str = ""

    @staticmethod
    def from_json(raw: Mapping[str, Json]) -> Answer:
        selected = raw.get("selected") or []
        text = raw.get("text") or ""
        if not isinstance(selected, list) or not all(isinstance(s, str) for s in selected):
            raise QuestionError("an answer's 'selected' must be a list of option labels")
        if not isinstance(text, str):
            raise QuestionError("an answer's 'text' must be a string")
        return Answer(tuple(str(s) for s in selected), text)


class QuestionRequest(msgspec.Struct, frozen=True):
    """What an answerer is asked. `signal` fires if the turn is cancelled meanwhile."""

    call_id: str
    questions: tuple[Question, ...]
    agent: object
    session_id: str | None
    signal: CancelSignal


QuestionAnswerer: TypeAlias = Callable[[QuestionRequest], Awaitable[Sequence[Answer] | None]]
"""Returns one answer per question, or None when the person declined to answer."""


class QuestionError(HarnessError):
    def __init__(self, message: str, code: str = "QUESTION") -> None:
        super().__init__(message, code)


class NoPersonError(QuestionError):
    """Nobody can answer here (`dsh run`, a batch, a client that does not answer)."""

    def __init__(self) -> None:
        super().__init__(
            "no person can answer questions in this session (it runs unattended). Decide by "
            "yourself: take the most reasonable choice, say which one and why, and go on",
            "NO_PERSON",
        )


class UserQuestions:
    """The questions service; bound per context, so `set_answerer` is owned by the caller."""

    __slots__ = ("_answerers", "_ctx")

    def __init__(self, ctx: Context, _answerers: Answerers[QuestionAnswerer] | None = None) -> None:
        self._ctx = ctx
        self._answerers: Answerers[QuestionAnswerer] = _answerers or Answerers()

    def bind_context(self, ctx: Context) -> UserQuestions:
        return UserQuestions(ctx, self._answerers)

    @property
    def has_answerer(self) -> bool:
        return self._answerers.current is not None

    def set_answerer(self, answerer: QuestionAnswerer) -> Disposer:
        """Route questions to `answerer` until the returned disposer runs (the latest wins)."""
        return self._answerers.add(answerer, self._ctx.owner)

    async def ask(self, request: QuestionRequest) -> tuple[Answer, ...] | None:
        """The person's answers (None: declined). Raises `NoPersonError` without an
        answerer and `Aborted` when the request's signal fires first."""
        answerer = self._answerers.current
        if answerer is None:
            raise NoPersonError()
        answers = await request.signal.race(answerer(request))
        if answers is None:
            return None
        answers = tuple(answers)
        if not all(isinstance(a, Answer) for a in answers):
            raise QuestionError("an answerer must give `Answer` values")
        check_answers(request.questions, answers)
        return answers


def check_answers(questions: Sequence[Question], answers: Sequence[Answer]) -> None:
    """Raise `QuestionError` unless there is one answer per question, each choosing only
    among its question's options (one, unless it is multi-select)."""
    if len(answers) != len(questions):
        raise QuestionError(f"{len(answers)} answers to {len(questions)} questions")
    for question, answer in zip(questions, answers, strict=True):
        labels = {o.label for o in question.options}
        unknown = [label for label in answer.selected if label not in labels]
        if unknown:
            raise QuestionError(f"{unknown[0]!r} is not an option of {question.question!r}")
        if len(answer.selected) > 1 and not question.multi_select:
            raise QuestionError(f"{question.question!r} takes one choice")


QUESTIONS: ServiceKey[UserQuestions] = ServiceKey("questions")
