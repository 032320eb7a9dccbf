"""Elicitation: a server's `elicitation/create` (the SDK server's `ctx.elicit`) is asked of
the person through the questions service, checked against the schema, declinable; with
nobody to ask it is declined."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from dsh.agent import run_prompt
from dsh.plugins.ask_user import QUESTIONS, Answer, AskUserPlugin, QuestionRequest
from dsh.plugins.mcp._elicit import content_from, questions_for
from dsh.testing import reply, tool_call

from .support import stdio_server
from .test_servers import result_text, results

SCHEMA = {
    "type": "object",
    "properties": {
        "size": {"type": "string", "enum": ["s", "m"], "enumNames": ["Small", "Medium"]},
        "note": {"type": "string", "maxLength": 5},
    },
    "required": ["size"],
}


async def booked(rt: Any, workspace: Path) -> str:
    agent = await rt.agent(workspace)
    rt.model.add(reply(tool_call("mcp__calc__book", {})), reply("done"))
    await run_prompt(agent, "book")
    return result_text(results(agent)[0])


async def test_the_person_answers_the_servers_questions(
    workspace: Path, runtime_factory: Any
) -> None:
    rt = await runtime_factory(workspace, {"mcpServers": {"calc": stdio_server()}})
    await rt.ctx.plugin(AskUserPlugin)
    asked: list[QuestionRequest] = []
    replies = [
        [Answer(text="friday"), Answer(text="twenty"), Answer(("yes",))],
        [Answer(text="friday"), Answer(text="4"), Answer(("yes",))],
    ]

    async def person(request: QuestionRequest) -> list[Answer]:
        asked.append(request)
        return replies[len(asked) - 1]

    rt.ctx.require(QUESTIONS).set_answerer(person)
    assert await booked(rt, workspace) == "booked friday for 4 (terrace: True)"
    first, second = asked
    assert [q.question for q in first.questions] == [
        "Book a table?\nDay",
        "Guests",
        "Terrace — Sit outside",
    ]
    assert [o.label for o in first.questions[2].options] == ["yes", "no"]
    assert first.questions[0].header == "calc" and first.session_id == "session-1"
    assert second.questions[0].question.startswith("(Guests: expected an integer) ")


async def test_a_declined_question_is_declined(workspace: Path, runtime_factory: Any) -> None:
    rt = await runtime_factory(workspace, {"mcpServers": {"calc": stdio_server()}})
    await rt.ctx.plugin(AskUserPlugin)

    async def person(request: QuestionRequest) -> None:
        return None

    rt.ctx.require(QUESTIONS).set_answerer(person)
    assert await booked(rt, workspace) == "decline"


async def test_headless_runs_decline_with_a_note(
    workspace: Path, runtime_factory: Any, caplog: Any
) -> None:
    caplog.set_level(logging.WARNING, "dsh.mcp")
    rt = await runtime_factory(workspace, {"mcpServers": {"calc": stdio_server()}})
    assert await booked(rt, workspace) == "decline"
    assert 'MCP server "calc" asked for input ("Book a table?"); nobody can answer here' in (
        caplog.text
    )


def test_answers_are_checked_against_the_schema() -> None:
    (size, note) = questions_for("shop", "Order?", SCHEMA)
    assert [o.label for o in size.options] == ["Small", "Medium"]
    assert note.question == "note (optional)"
    assert content_from(SCHEMA, [Answer(("Medium",)), Answer()]) == {"size": "m"}
    assert content_from(SCHEMA, [Answer(text="s"), Answer(text="hi")]) == {
        "size": "s",
        "note": "hi",
    }
    for answers, problem in [
        ([Answer(), Answer()], "size: an answer is needed"),
        ([Answer(text="xl"), Answer()], "size: expected one of Small, Medium"),
        ([Answer(("Small",)), Answer(text="too long")], "note: at most 5 characters"),
    ]:
        try:
            content_from(SCHEMA, answers)
        except Exception as exc:
            assert str(exc) == problem
        else:
            raise AssertionError(f"{answers} passed")
