"""`AskUserPlugin`: the `ask_user_question` tool and the questions service it asks through."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, ClassVar, NotRequired

from typing_extensions import TypedDict

from ..._context import Context
from ...agent import Agent
from ...kernel import ConfigError, Injects, convert
from ...llm import Json
from ...tools import TOOLS, Arg, ToolPlugin, ToolRunContext, offer_when, tool
from ._service import (
    QUESTIONS,
    Answer,
    NoPersonError,
    Option,
    Question,
    QuestionError,
    QuestionRequest,
    UserQuestions,
)

__all__ = ["DECLINED", "AskUserPlugin", "ask_user_question", "questions_of", "render_answers"]

DECLINED = (
    "The user declined to answer. Do not ask the same again now: decide by yourself, or stop "
    "and say what you need to know."
)


class OptionArg(TypedDict):
    label: str
    description: NotRequired[Annotated[str, Arg("What choosing it implies.")]]


class QuestionArg(TypedDict):
    question: str
    header: NotRequired[Annotated[str, Arg("A label of one or two words.")]]
    options: NotRequired[Annotated[list[OptionArg], Arg("Two to four clear choices.")]]
    multi_select: NotRequired[bool]


def _question(raw: QuestionArg) -> Question:
    options = tuple(Option(o["label"], o.get("description", "")) for o in raw.get("options", []))
    labels = [o.label for o in options]
    if len(set(labels)) != len(labels):
        raise QuestionError(f"the options of {raw['question']!r} repeat a label")
    return Question(raw["question"], raw.get("header", ""), options, raw.get("multi_select", False))


def questions_of(arguments: Json) -> tuple[Question, ...]:
    """The questions of an `ask_user_question` call's parsed arguments (as logged, so a
    surface can show them and check answers); `QuestionError` when they are not its shape."""
    raw = arguments.get("questions") if isinstance(arguments, dict) else None
    try:
        parsed: list[QuestionArg] = convert(list[QuestionArg], raw)
    except ConfigError:
        raise QuestionError("the call's arguments are not a list of questions") from None
    return tuple(_question(q) for q in parsed)


def render_answers(questions: Sequence[Question], answers: Sequence[Answer]) -> str:
    """What the model reads: one line per question with what was chosen and written."""
    lines = ["The user answered:"]
    for question, answer in zip(questions, answers, strict=True):
        parts = [", ".join(answer.selected)] if answer.selected else []
        if answer.text:
            parts.append(f'wrote "{answer.text}"' if answer.selected else f'"{answer.text}"')
        lines.append(f"- {question.question} → {' — '.join(parts) or '(no answer)'}")
    return "\n".join(lines)


@tool
async def ask_user_question(
    questions: Annotated[list[QuestionArg], Arg(min_length=1, max_length=4)],
    *,
    run: ToolRunContext,
) -> str:
    """Ask the user one to four questions and wait for the answers: for a decision, a
    preference or a fact only they have, not what you can find out. They may answer in their
    own words. If no one can answer (an unattended run), decide by yourself.
    """
    agent = run.agent
    service = agent.ctx.get(QUESTIONS) if isinstance(agent, Agent) else None
    if service is None:
        raise NoPersonError()
    asked = tuple(_question(q) for q in questions)
    session = run.session
    request = QuestionRequest(
        run.call_id, asked, agent, None if session is None else session.id, run.signal
    )
    answers = await service.ask(request)
    return DECLINED if answers is None else render_answers(asked, answers)


class AskUserPlugin:
    """Provides `UserQuestions` under `QUESTIONS` and the `ask_user_question` tool."""

    name: ClassVar[str] = "ask_user"
    inject: ClassVar[Injects] = (TOOLS,)

    @staticmethod
    async def apply(ctx: Context, config: None) -> None:
        questions = UserQuestions(ctx)
        ctx.provide(QUESTIONS, questions)
        # Where nobody answers (`dsh run`, a batch, a client without the capability) the
        # tool could only fail: it is offered once an answerer is there.
        offer_when(ctx, ask_user_question.name, lambda _agent: questions.has_answerer)
        await ctx.plugin(ToolPlugin("ask_user:tool", [ask_user_question]), id="ask_user:tool")
