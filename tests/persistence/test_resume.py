"""Resume through persistence: after every kind of ending, on both backends; errors; fork."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from dsh.agent import (
    AGENT_SESSION_START,
    PROMPT_SUBMIT,
    USER_CANCEL,
    Block,
    CreateAgentOptions,
    PromptDecision,
    PromptSubmit,
    ResumeAgentOptions,
    SessionStart,
)
from dsh.kernel import Next
from dsh.loop import ReactLoopAgent
from dsh.persistence import SessionExistsError, UnknownSessionError
from dsh.testing import failure, reply, tool_call
from dsh.tools import tool

from .conftest import Runtime, RuntimeFactory, stored_sessions

BACKENDS = ["jsonl", "sqlite"]


def _last_end(agent: ReactLoopAgent) -> dict[str, Any]:
    ends = [e for e in agent.session.events if e.type == "turn/end"]
    return dict(ends[-1].data["reason"])


async def _completed(runtime: Runtime, agent: ReactLoopAgent) -> None:
    runtime.model.add(reply("first answer"))
    agent.followup("hello")
    await agent.when_idle()


async def _aborted(runtime: Runtime, agent: ReactLoopAgent) -> None:
    streaming = asyncio.Event()
    runtime.model.add(reply("typing", hang=True, expect=lambda _: streaming.set() or True))
    agent.followup("hello")
    await streaming.wait()
    agent.cancel(USER_CANCEL)
    await agent.when_idle()


async def _error(runtime: Runtime, agent: ReactLoopAgent) -> None:
    runtime.model.add(reply(failure("SERVER_ERROR", "boom")))
    agent.followup("hello")
    await agent.when_idle()


async def _max_tokens(runtime: Runtime, agent: ReactLoopAgent) -> None:
    runtime.model.add(reply("partial", finish="max-tokens"))
    agent.followup("hello")
    await agent.when_idle()


async def _blocked(runtime: Runtime, agent: ReactLoopAgent) -> None:
    async def block(payload: PromptSubmit, next: Next[PromptSubmit, PromptDecision]) -> Any:
        return Block("not now")

    dispose = runtime.ctx.on(PROMPT_SUBMIT, block, global_=True)
    agent.followup("hello")
    await agent.when_idle()
    dispose()


ENDINGS: dict[str, tuple[Callable[[Runtime, ReactLoopAgent], Any], str]] = {
    "completed": (_completed, "completed"),
    "aborted": (_aborted, "aborted"),
    "error": (_error, "error"),
    "max-tokens": (_max_tokens, "max-tokens"),
    "blocked": (_blocked, "blocked"),
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("ending", list(ENDINGS))
async def test_resume_after_each_kind_of_ending(
    ending: str, backend: str, tmp_path: Path, runtimes: RuntimeFactory
) -> None:
    run, kind = ENDINGS[ending]
    first = await runtimes(tmp_path, backend=backend)
    agent = await first.agent(f"session-{ending}")
    await run(first, agent)
    assert _last_end(agent)["kind"] == kind
    before = [e.to_json() for e in agent.session.events]
    had_header = agent.session.request_header() is not None
    await first.close()

    second = await runtimes(tmp_path, backend=backend)
    starts: list[SessionStart] = []
    second.ctx.on(AGENT_SESSION_START, starts.append, global_=True)
    resumed = await second.resume(f"session-{ending}")
    session = resumed.session
    assert [s.source for s in starts] == ["resume"]
    assert [e.to_json() for e in session.events[: len(before)]] == before  # nothing repaired
    assert session.first_live_seq == len(before)
    assert session.events[-1].type == "session/end-seed"
    second.model.add(reply("second answer"))
    resumed.followup("again")
    await resumed.when_idle()
    live = session.events[session.first_live_seq :]
    assert [e.data for e in live if e.type == "turn/start"] == [{"turn": 2}]
    headers = [e.data["reason"] for e in live if e.type == "request/header"]
    assert headers == ["resume" if had_header else "initial"]
    assert _last_end(resumed) == {"kind": "completed"}
    history = session.derive_messages()
    assert history[-1].text == "second answer"
    expected = [e.to_json() for e in session.events]
    await second.close()
    stored = await stored_sessions(tmp_path, backend).load(f"session-{ending}")
    assert [e.to_json() for e in stored.events] == expected


async def test_resumed_inbox_keeps_pending_work_until_woken(
    tmp_path: Path, runtimes: RuntimeFactory
) -> None:
    first = await runtimes(tmp_path)
    streaming = asyncio.Event()
    first.model.add(reply("one", hang=True, expect=lambda _: streaming.set() or True))
    agent = await first.agent("session-inbox")
    agent.followup("first")
    agent.followup("queued while busy")
    assert [m.text for m in agent.inbox.next_turn] == ["queued while busy"]
    await streaming.wait()  # "first" is in the history: the model was called with it
    await first.ctx.sessions.flush(agent.session)
    # A crash: the process dies with the first turn open and the second prompt queued.
    await first.persistence.coordinator.close()
    agent.cancel(USER_CANCEL, keep_inbox=True)
    await agent.when_idle()
    first.handles.clear()  # its final events were never written

    second = await runtimes(tmp_path)
    resumed = await second.resume("session-inbox")
    assert resumed.status == "idle"
    assert [m.text for m in resumed.inbox.next_turn] == ["queued while busy"]
    assert _last_end(resumed) == {"kind": "interrupted"}
    second.model.add(reply("answer to the queued prompt"), reply("answer to the new one"))
    resumed.followup("new")
    await resumed.when_idle()
    prompts = [
        m.text
        for m in resumed.session.derive_messages()[-4:]
        if m.role == "user"  # the two prompts, in inbox order
    ]
    assert prompts == ["queued while busy", "new"]
    assert [e.data["turn"] for e in resumed.session.events if e.type == "turn/start"] == [1, 2, 3]


async def test_resume_errors_are_clear(tmp_path: Path, runtimes: RuntimeFactory) -> None:
    bare = await runtimes(None)
    with pytest.raises(RuntimeError, match="no session persistence is configured"):
        await bare.ctx.agents.resume(ResumeAgentOptions("session-x"))
    runtime = await runtimes(tmp_path)
    with pytest.raises(UnknownSessionError, match="no stored session 'session-nope'"):
        await runtime.resume("session-nope")
    runtime.model.add(reply("hi"))
    agent = await runtime.agent("session-live")
    agent.followup("hi")
    await agent.when_idle()
    with pytest.raises(RuntimeError, match="already live"):
        await runtime.resume("session-live")


async def test_a_fresh_session_cannot_take_a_stored_id(
    tmp_path: Path, runtimes: RuntimeFactory
) -> None:
    first = await runtimes(tmp_path)
    first.model.add(reply("hi"))
    agent = await first.agent("session-taken")
    agent.followup("hi")
    await agent.when_idle()
    await first.close()
    second = await runtimes(tmp_path)
    with pytest.raises(SessionExistsError, match="already stored: resume it"):
        await second.agent("session-taken")
    assert second.ctx.sessions.get("session-taken") is None


async def test_fork_of_a_persisted_session_runs_an_agent(
    tmp_path: Path, runtimes: RuntimeFactory
) -> None:
    @tool
    async def note(text: str) -> str:
        """Take a note."""
        return text

    first = await runtimes(tmp_path)
    first.ctx.tools.register(note)
    first.model.add(reply(tool_call("note", {"text": "x"})), reply("noted"))
    agent = await first.agent("session-parent")
    agent.followup("take a note")
    await agent.when_idle()
    parent_events = [e.to_json() for e in agent.session.events]
    await first.close()

    second = await runtimes(tmp_path)
    fork = await second.persistence.fork("session-parent")
    handle = await second.ctx.agents.create(
        CreateAgentOptions("session-child", fork.meta, fork.events, second.options())
    )
    second.handles.append(handle)
    child = handle.agent
    assert isinstance(child, ReactLoopAgent)
    second.model.add(reply("forked answer"))
    child.followup("continue in the fork")
    await child.when_idle()
    assert [e.data["turn"] for e in child.session.events if e.type == "turn/start"] == [1, 2]
    await second.close()
    stored = stored_sessions(tmp_path)
    loaded = await stored.load("session-child")
    assert loaded.header.parent_session == "session-parent"
    assert [e.to_json() for e in loaded.events[: len(parent_events)]] == parent_events
    assert len((await stored.load("session-parent")).events) == len(parent_events)


async def test_a_vetoed_agent_creation_leaves_its_id_free(
    tmp_path: Path, runtimes: RuntimeFactory
) -> None:
    from dsh.agent import AGENT_CREATED

    first = await runtimes(tmp_path)
    first.model.add(reply("done"))
    agent = await first.agent("session-source")
    agent.followup("hello")
    await agent.when_idle()
    await first.close()

    second = await runtimes(tmp_path)
    fork = await second.persistence.fork("session-source")
    vetoes = [RuntimeError("vetoed agent")]

    def veto(event: Any) -> None:
        if vetoes:
            raise vetoes.pop()

    second.ctx.on(AGENT_CREATED, veto, global_=True)
    options = CreateAgentOptions("session-vetoed", fork.meta, fork.events, second.options())
    with pytest.raises(RuntimeError, match="vetoed agent"):
        await second.ctx.agents.create(options)
    await second.persistence.coordinator.settle("session-vetoed")
    assert not second.persistence.backend.exists("session-vetoed")
    handle = await second.ctx.agents.create(options)  # the retry
    second.handles.append(handle)
    await second.close()
    loaded = await stored_sessions(tmp_path).load("session-vetoed")
    assert len(loaded.events) == len(fork.events) + 1  # the seed, then session/end-seed
