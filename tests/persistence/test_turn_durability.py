"""A finished turn is on disk when the agent goes idle (turn end → `session/flush`)."""

from __future__ import annotations

from pathlib import Path

from dsh.agent import run_prompt
from dsh.testing import reply

from .conftest import RuntimeFactory, stored_sessions


async def test_a_finished_turn_is_stored_when_run_prompt_returns(
    tmp_path: Path, runtimes: RuntimeFactory
) -> None:
    # A batching window far longer than the test: only a flush writes the turn's end.
    runtime = await runtimes(tmp_path, window_ms=600_000)
    agent = await runtime.agent()
    runtime.model.add(reply("the answer"))
    result = await run_prompt(agent, "question")
    assert result.finish_reason == "completed"
    stored = await stored_sessions(tmp_path).read_from(agent.id, 0)
    assert [e.type for e in stored] == [e.type for e in agent.session.events]
    assert stored[-1].type == "turn/end"


async def test_a_failed_turn_end_flush_is_reported_and_the_agent_stays_usable(
    tmp_path: Path, runtimes: RuntimeFactory
) -> None:
    from dsh.agent import AGENT_ERROR, AgentError
    from dsh.session import SESSION_FLUSH, Session

    runtime = await runtimes(None)
    agent = await runtime.agent()
    errors: list[AgentError] = []
    runtime.ctx.on(AGENT_ERROR, errors.append)
    failing = [True]

    async def flush(session: Session) -> None:
        if failing.pop(0) if failing else False:
            raise OSError("disk full (simulated)")

    runtime.ctx.on(SESSION_FLUSH, flush)
    runtime.model.add(reply("one"), reply("two"))
    assert (await run_prompt(agent, "first")).finish_reason == "completed"
    assert [str(e.error) for e in errors] == ["disk full (simulated)"]
    assert agent.status == "idle"
    assert (await run_prompt(agent, "second")).text == "two"
