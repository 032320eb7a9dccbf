"""The model's questions (`ask_user_question`) asked of the editor. Protocol version 1 has one
stable way to ask a person something, `session/request_permission`, so each question is one
such request whose options are its choices (plus "Decline"); the SDK's elicitation, which
could carry free text, is still unstable."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from acp import RequestError
from acp.helpers import text_block, tool_content
from acp.schema import AllowedOutcome, PermissionOption, ToolCallUpdate

from ..plugins.ask_user import Answer, NoPersonError, Question, QuestionError, QuestionRequest

if TYPE_CHECKING:
    from ._session import AcpSession

__all__ = ["CHOICES_ONLY", "ask_editor"]

_log = logging.getLogger("dsh.acp")

DECLINE = "decline"
CHOICES_ONLY = (
    "the editor answers questions only by choosing among options: ask again with options for "
    "every question, or decide by yourself"
)


async def ask_editor(session: AcpSession, request: QuestionRequest) -> list[Answer] | None:
    """One permission request per question, in order; None when the person declines or the
    editor cancels a request. A question without options cannot be asked (`CHOICES_ONLY`)."""
    if not all(question.options for question in request.questions):
        raise QuestionError(CHOICES_ONLY, "CHOICES_ONLY")
    await session.shown(request.session_id)
    answers: list[Answer] = []
    total = len(request.questions)
    for number, question in enumerate(request.questions, 1):
        try:
            response = await session.client.request_permission(
                session_id=session.id,
                tool_call=_call(request.call_id, question, number, total),
                options=_options(question),
            )
        except (RequestError, ConnectionError) as exc:
            _log.warning("asking the editor a question failed: %s", exc)
            raise NoPersonError() from None
        outcome = response.outcome
        if not isinstance(outcome, AllowedOutcome) or outcome.option_id == DECLINE:
            return None
        answers.append(Answer((_label(question, outcome.option_id),)))
    return answers


def _call(call_id: str, question: Question, number: int, total: int) -> ToolCallUpdate:
    """The call as the request shows it: the question as its title, the options' descriptions
    (and that one choice is taken here) as its content."""
    title = f"{question.header}: {question.question}" if question.header else question.question
    lines = [f"{o.label} — {o.description}" for o in question.options if o.description]
    if question.multi_select:
        lines.append("(several may apply: choose the one that matters most)")
    return ToolCallUpdate(
        tool_call_id=call_id,
        title=f"({number}/{total}) {title}" if total > 1 else title,
        kind="other",
        content=[tool_content(text_block("\n".join(lines)))] if lines else None,
    )


def _options(question: Question) -> list[PermissionOption]:
    choices = [
        PermissionOption(option_id=f"option-{i}", name=option.label, kind="allow_once")
        for i, option in enumerate(question.options)
    ]
    return [*choices, PermissionOption(option_id=DECLINE, name="Decline", kind="reject_once")]


def _label(question: Question, option_id: str) -> str:
    index = option_id.removeprefix("option-")
    if not index.isdigit() or int(index) >= len(question.options):
        raise QuestionError(f"the editor chose an option dsh did not offer: {option_id!r}")
    return question.options[int(index)].label
