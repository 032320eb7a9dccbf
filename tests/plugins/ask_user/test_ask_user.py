"""`ask_user_question` through the loop: answered, declined, nobody there, cancelled."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from dsh.agent import USER_CANCEL, run_prompt
from dsh.llm import Message, TextBlock, ToolResultBlock
from dsh.plugins.ask_user import (
    DECLINED,
    QUESTIONS,
    Answer,
    AskUserPlugin,
    Option,
    Question,
    QuestionError,
    QuestionRequest,
    questions_of,
)
from dsh.testing import reply, tool_call, until
from tests.conftest import Runtime

QUESTIONS_ARGS: dict[str, Any] = {
    "questions": [
        {
            "question": "Which database?",
            "header": "Database",
            "options": [
                {"label": "PostgreSQL", "description": "the server"},
                {"label": "SQLite"},
            ],
        },
        {"question": "Anything else?"},
    ]
}


def last_result(agent: Any) -> ToolResultBlock:
    event = [e for e in agent.session.events if e.type == "tool/result"][-1]
    block = Message.from_json(event.data["message"]).content[0]
    assert isinstance(block, ToolResultBlock)
    return block


def text(block: ToolResultBlock) -> str:
    return "".join(b.text for b in block.content if isinstance(b, TextBlock))


async def test_the_answers_reach_the_model(runtime: Runtime) -> None:
    await runtime.ctx.plugin(AskUserPlugin)
    asked: list[QuestionRequest] = []

    async def person(request: QuestionRequest) -> list[Answer]:
        asked.append(request)
        return [Answer(("PostgreSQL",)), Answer(text="use port 5433")]

    runtime.ctx.require(QUESTIONS).set_answerer(person)
    runtime.model.add(reply(tool_call("ask_user_question", QUESTIONS_ARGS)), "Thanks.")
    agent = await runtime.agent()
    await run_prompt(agent, "set up the database")
    [request] = asked
    assert request.questions == (
        Question(
            "Which database?",
            "Database",
            (Option("PostgreSQL", "the server"), Option("SQLite")),
        ),
        Question("Anything else?"),
    )
    assert request.session_id == agent.id and request.agent is agent
    result = last_result(agent)
    assert not result.is_error
    assert text(result) == (
        'The user answered:\n- Which database? → PostgreSQL\n- Anything else? → "use port 5433"'
    )


async def test_nobody_to_ask_tells_the_model_to_decide(runtime: Runtime) -> None:
    await runtime.ctx.plugin(AskUserPlugin)
    runtime.model.add(reply(tool_call("ask_user_question", QUESTIONS_ARGS)), "I chose SQLite.")
    agent = await runtime.agent()
    await run_prompt(agent, "set up the database")
    result = last_result(agent)
    assert result.is_error
    assert text(result).startswith("Error: no person can answer questions in this session")
    assert "Decide by yourself" in text(result)


async def test_declined_and_the_latest_answerer_wins(runtime: Runtime) -> None:
    await runtime.ctx.plugin(AskUserPlugin)
    service = runtime.ctx.require(QUESTIONS)

    async def first(request: QuestionRequest) -> list[Answer]:
        return [Answer(("SQLite",)), Answer()]

    async def declines(request: QuestionRequest) -> None:
        return None

    service.set_answerer(first)
    later = service.set_answerer(declines)
    runtime.model.add(reply(tool_call("ask_user_question", QUESTIONS_ARGS)), "ok")
    runtime.model.add(reply(tool_call("ask_user_question", QUESTIONS_ARGS)), "ok")
    agent = await runtime.agent()
    await run_prompt(agent, "one")
    assert text(last_result(agent)) == DECLINED
    later()
    await run_prompt(agent, "two")
    assert text(last_result(agent)).endswith("- Anything else? → (no answer)")


async def test_a_cancel_stops_the_question(runtime: Runtime) -> None:
    await runtime.ctx.plugin(AskUserPlugin)
    waiting = asyncio.Event()
    stopped = asyncio.Event()

    async def slow(request: QuestionRequest) -> list[Answer]:
        waiting.set()
        try:
            await asyncio.Event().wait()
        finally:
            stopped.set()
        raise AssertionError("never answered")

    runtime.ctx.require(QUESTIONS).set_answerer(slow)
    runtime.model.add(reply(tool_call("ask_user_question", QUESTIONS_ARGS)))
    agent = await runtime.agent()
    agent.followup("ask me")
    await waiting.wait()
    agent.cancel(USER_CANCEL)
    end = await until(agent, "turn/end")
    assert end.data["reason"]["kind"] == "aborted"
    assert stopped.is_set()  # the person's prompt was taken down
    assert last_result(agent).is_error


async def test_answers_are_checked_against_the_questions(runtime: Runtime) -> None:
    await runtime.ctx.plugin(AskUserPlugin)
    given = iter([[Answer(("MySQL",)), Answer()], [Answer(("SQLite", "PostgreSQL")), Answer()]])

    async def wrong(request: QuestionRequest) -> list[Answer]:
        return next(given)

    runtime.ctx.require(QUESTIONS).set_answerer(wrong)
    runtime.model.add(reply(tool_call("ask_user_question", QUESTIONS_ARGS)), "ok")
    runtime.model.add(reply(tool_call("ask_user_question", QUESTIONS_ARGS)), "ok")
    agent = await runtime.agent()
    await run_prompt(agent, "one")
    assert last_result(agent).is_error
    assert "'MySQL' is not an option of 'Which database?'" in text(last_result(agent))
    await run_prompt(agent, "two")
    assert "'Which database?' takes one choice" in text(last_result(agent))
    with pytest.raises(QuestionError, match="the call's arguments are not a list of questions"):
        questions_of({"questions": [{"header": "no question"}]})
    assert questions_of(QUESTIONS_ARGS)[1] == Question("Anything else?")


async def test_the_tool_is_offered_once_someone_can_answer_then_stays(runtime: Runtime) -> None:
    await runtime.ctx.plugin(AskUserPlugin)
    runtime.model.add("one", "two", "three")
    agent = await runtime.agent()
    await run_prompt(agent, "nobody here")  # `dsh run`, a batch: the tool could only fail

    async def person(request: QuestionRequest) -> list[Answer]:
        return [Answer(text="yes")]

    release = runtime.ctx.require(QUESTIONS).set_answerer(person)
    await run_prompt(agent, "someone now")
    release()
    await run_prompt(agent, "gone again")
    offered = [[t.name for t in r.tools] for r in runtime.model.requests]
    assert offered == [[], ["ask_user_question"], ["ask_user_question"]]  # the prefix holds
