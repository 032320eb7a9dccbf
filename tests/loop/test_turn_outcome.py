"""A closed turn tells its agent what comes next (`TurnOutcome`); the agent carries it out."""

from __future__ import annotations

from typing import Any

import pytest

from dsh.agent import AGENT_ERROR, USER_CANCEL, AgentError
from dsh.events import CancelCause, TurnEndReason
from dsh.loop._turn import Cancelled, Finished, FlushFailed, NextTurn, TurnOutcome, TurnRunner
from dsh.session import SESSION_EVENT, SESSION_FLUSH, ReentrantAppendError, Session
from dsh.testing import hold, reply
from tests.conftest import Runtime, types


@pytest.fixture
def outcomes(monkeypatch: pytest.MonkeyPatch) -> list[TurnOutcome]:
    """Every outcome a `TurnRunner` returns, in order."""
    seen: list[TurnOutcome] = []
    run_turn = TurnRunner.run_turn

    async def recording(self: TurnRunner, activity: Any) -> TurnOutcome:
        outcome = await run_turn(self, activity)
        seen.append(outcome)
        return outcome

    monkeypatch.setattr(TurnRunner, "run_turn", recording)
    return seen


async def test_a_queued_prompt_is_the_next_turn(
    runtime: Runtime, outcomes: list[TurnOutcome]
) -> None:
    held = hold()
    runtime.model.add(reply("one", held), reply("two"))
    agent = await runtime.agent()
    agent.followup("first")
    await held.reached()
    agent.followup("second")
    held.release()
    await agent.when_idle()
    assert outcomes == [NextTurn(), Finished(TurnEndReason("completed"))]
    assert types(agent).count("turn/end") == 2


async def test_a_cancelled_turn_settles_and_keeps_what_keep_inbox_kept(
    runtime: Runtime, outcomes: list[TurnOutcome]
) -> None:
    held = hold()
    runtime.model.add(reply("partial", held))
    agent = await runtime.agent()
    agent.followup("first")
    await held.reached()
    agent.followup("kept")
    agent.cancel(USER_CANCEL, keep_inbox=True)
    await agent.when_idle()
    assert outcomes == [Cancelled(CancelCause("user"))]
    assert [m.text for m in agent.inbox.next_turn] == ["kept"]  # waits for a wake


async def test_a_failed_checkpoint_is_reported_by_the_agent_and_stops_the_driver(
    runtime: Runtime, outcomes: list[TurnOutcome]
) -> None:
    errors: list[AgentError] = []
    runtime.ctx.on(AGENT_ERROR, errors.append)

    async def flush(session: Session) -> None:
        raise OSError("disk full (simulated)")

    off = runtime.ctx.on(SESSION_FLUSH, flush)
    runtime.model.add(reply("one"))
    agent = await runtime.agent()
    agent.followup("first")
    agent.followup("queued")
    await agent.when_idle()
    off()
    [outcome] = outcomes
    assert isinstance(outcome, FlushFailed) and (outcome.turn, outcome.step) == (1, 1)
    assert [(e.turn, e.step, e.error) for e in errors] == [(1, 1, outcome.error)]
    assert agent.status == "idle" and [m.text for m in agent.inbox.next_turn] == ["queued"]


async def test_a_turn_that_cannot_open_is_reported_and_the_send_raises(runtime: Runtime) -> None:
    errors: list[AgentError] = []
    runtime.ctx.on(AGENT_ERROR, errors.append)
    agent = await runtime.agent()
    agent.inject("pending")
    raised: list[BaseException] = []

    def wake_while_publishing(payload: Any) -> None:
        # `turn/start` cannot be appended while the session publishes an event.
        if payload.session is agent.session and not raised:
            try:
                agent.wake()
            except ReentrantAppendError as exc:
                raised.append(exc)

    off = runtime.ctx.on(SESSION_EVENT, wake_while_publishing)
    agent.inject("more")
    off()
    assert [(e.turn, e.step, e.error) for e in errors] == [(0, 0, raised[0])]
    assert agent.status == "idle" and "turn/start" not in types(agent)
    runtime.model.add(reply("ok"))
    assert agent.wake()
    await agent.when_idle()
    assert types(agent)[-1] == "turn/end"
