"""The crash test: a real child process running a multi-step agent with persistence on is
SIGKILLed at seeded random points; every time, the log loads, repairs, resumes and completes
a follow-up turn, and no event the child saw stored is missing."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from dsh.llm import UserMessage, user_message
from dsh.persistence import repair_closers
from dsh.session import Session
from dsh.testing import reply

from .claim_child import run_until_claimed
from .conftest import RuntimeFactory, stored_sessions
from .crash_trial import Trial, run_trial, summary

TRIALS = 32
PARALLEL = 4


async def test_sigkill_at_random_points_loses_nothing_stored(tmp_path: Path) -> None:
    gate = asyncio.Semaphore(PARALLEL)

    async def trial(seed: int) -> Trial:
        async with gate:
            return await run_trial(tmp_path / f"trial-{seed}", seed)

    trials = await asyncio.gather(*(trial(seed) for seed in range(TRIALS)))
    facts = summary(list(trials))
    # The kills land in different places: open turns get closed, some with tool results.
    assert facts["repaired"] >= TRIALS // 3, facts
    assert facts["closers"].get("turn/end", 0) == facts["repaired"]
    assert facts["torn"] > 0 and facts["sqlite"] > 0, facts


async def test_a_prompt_claimed_but_not_logged_survives_a_sigkill(
    tmp_path: Path, runtimes: RuntimeFactory
) -> None:
    prompt = "the only copy of this prompt"
    await run_until_claimed("agent", str(tmp_path), "session-claimed", prompt)
    store = stored_sessions(tmp_path)
    view = await store.inspect("session-claimed")
    store.backend.close()
    assert not any(e.type == "user/message" for e in view.events[: -len(view.repair)])
    assert [e.type for e in view.repair] == ["turn/end", "agent/inbox/spliced"]
    sent = next(e for e in view.events if e.type == "agent/inbox/spliced").data["inserted"][0]
    assert view.repair[-1].data == {"target": "next-turn", "start": 0, "inserted": [sent]}

    runtime = await runtimes(tmp_path)
    runtime.model.add(reply("answered"))
    agent = await runtime.resume("session-claimed")
    assert [m.id for m in agent.inbox.next_turn] == [sent["id"]]  # the inbox has it again
    assert agent.wake()
    await agent.when_idle()
    logged = [e.data for e in agent.session.events if e.type == "user/message"]
    assert [(m["id"], m["content"][0]["text"]) for m in logged] == [(sent["id"], prompt)]
    assert runtime.model.requests[0].messages[-1].text == prompt
    assert [e.data["reason"]["kind"] for e in agent.session.events if e.type == "turn/end"] == [
        "interrupted",
        "completed",
    ]
    assert not agent.wake()  # nothing pending any more


def test_repair_gives_back_only_what_the_open_turn_claimed_and_never_logged() -> None:
    session = Session.create("s")
    a, b, c, d, e = (user_message(text) for text in "abcde")

    def splice(target: str, removed: int, *inserted: UserMessage, **extra: Any) -> None:
        data = {"target": target, "start": 0, "removedCount": removed, **extra}
        session.append("agent/inbox/spliced", {**data, "inserted": [m.to_json() for m in inserted]})

    splice("next-turn", 0, a, b)
    splice("next-step", 0, c, d)
    session.append("turn/start", {"turn": 1})
    splice("next-turn", 1)  # the turn claims a
    splice("next-step", 1, outcome="canceled")  # c dropped by a cancel: gone for good
    session.append("step/start", {"turn": 1, "step": 1})
    session.append("user/message", a.to_json(), surface_op="append")
    session.append("step/end", {"turn": 1, "step": 1})
    splice("next-step", 1)  # the next step claims d; the crash comes before it is logged
    splice("next-step", 0, e)  # steering sent meanwhile: still pending, nothing to give back
    repair = repair_closers(session.events).events
    assert [r.type for r in repair] == ["turn/end", "agent/inbox/spliced"]
    assert repair[-1].data == {"target": "next-step", "start": 0, "inserted": [d.to_json()]}
