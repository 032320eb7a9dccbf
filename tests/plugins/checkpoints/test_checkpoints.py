"""The checkpoint policy: flush before model calls and tool bodies (the step boundary once);
fail closed."""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from dsh import Context
from dsh.agent import PRE_STEP, USER_CANCEL, StepPoint
from dsh.llm import GenerateOptions, Message, ToolResultBlock, text_of
from dsh.persistence import JsonlBackend, Record, SessionBackend, mount_persistence
from dsh.plugins.checkpoints import CheckpointPlugin
from dsh.testing import reply, tool_call
from dsh.tools import ToolRunContext, tool

from ...persistence.conftest import Runtime, RuntimeFactory

WINDOW = 60_000  # ms: only checkpoints (and disposal) write during these tests


def _stored(root: Path, session_id: str) -> int:
    """How many events of `session_id` are on disk now."""
    backend = JsonlBackend(root)
    return backend.read(session_id).next_seq if backend.exists(session_id) else 0


async def test_everything_is_stored_before_each_model_call_and_tool_body(
    tmp_path: Path, runtimes: RuntimeFactory
) -> None:
    runtime = await runtimes(tmp_path, window_ms=WINDOW)
    seen: dict[str, list[tuple[int, int]]] = {"model": [], "tool": []}
    pre_steps: list[tuple[int, int]] = []
    agent_box: list[Any] = []

    def at_model(options: GenerateOptions) -> bool:
        session = agent_box[0].session
        seen["model"].append((_stored(tmp_path, session.id), session.seq))
        return True

    @tool
    async def probe(run: ToolRunContext) -> str:
        """Look at the store."""
        session = agent_box[0].session
        seen["tool"].append((_stored(tmp_path, session.id), session.seq))
        return "ok"

    def at_pre_step(point: StepPoint) -> None:
        session = point.agent.session
        pre_steps.append((_stored(tmp_path, session.id), session.seq))

    runtime.ctx.tools.register(probe)
    runtime.ctx.on(PRE_STEP, at_pre_step, global_=True)
    runtime.model.add(reply(tool_call("probe"), expect=at_model), reply("done", expect=at_model))
    agent = await runtime.agent("session-checkpoints")
    agent_box.append(agent)
    agent.followup("go")
    await agent.when_idle()
    assert len(seen["model"]) == 2 and len(seen["tool"]) == 1
    for point, observations in seen.items():
        for stored, live in observations:
            assert stored == live, f"{point}: {stored} of {live} events stored"
    # The step boundary is committed once, before the model call: at the second pre-step
    # the first step's tool result is not written yet.
    stored, live = pre_steps[1]
    assert stored < live


async def _fsyncs_for(
    steps: int,
    tmp_path: Path,
    runtimes: RuntimeFactory,
    monkeypatch: pytest.MonkeyPatch,
    name: str = "noop",
) -> int:
    runtime = await runtimes(tmp_path / f"{name}-{steps}", window_ms=WINDOW)
    fsync = os.fsync
    calls: list[int] = []

    def counting(fd: int) -> None:
        calls.append(fd)
        fsync(fd)

    @tool(name=name)
    def noop() -> str:
        """Do nothing."""
        return "ok"

    runtime.ctx.tools.register(noop)
    runtime.model.add(*[reply(tool_call(name)) for _ in range(steps)], reply("done"))
    agent = await runtime.agent(f"session-fsyncs-{name}-{steps}")
    monkeypatch.setattr(os, "fsync", counting)
    agent.followup("go")
    await agent.when_idle()
    monkeypatch.setattr(os, "fsync", fsync)
    return len(calls)


async def test_a_tool_step_costs_two_fsyncs(
    tmp_path: Path, runtimes: RuntimeFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cheap invariant the benchmarks rely on: each further step with one tool call adds
    two durable flushes (before its model call, before its tool body), one fsync each."""
    few = await _fsyncs_for(2, tmp_path, runtimes, monkeypatch)
    more = await _fsyncs_for(6, tmp_path, runtimes, monkeypatch)
    assert (more - few) / 4 == 2


async def test_a_step_that_only_reads_costs_one_fsync(
    tmp_path: Path, runtimes: RuntimeFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`read`, `glob` and `grep` change nothing outside the process: no flush before their
    body (the call is durable with the next model call's flush)."""
    few = await _fsyncs_for(2, tmp_path, runtimes, monkeypatch, name="read")
    more = await _fsyncs_for(6, tmp_path, runtimes, monkeypatch, name="read")
    assert (more - few) / 4 == 1


class _Broken:
    """A JSONL backend whose writes fail while `broken` is set."""

    def __init__(self, inner: SessionBackend) -> None:
        self.inner = inner
        self.name = inner.name
        self.store_id = inner.store_id
        self.broken = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def _check(self) -> None:
        if self.broken:
            raise OSError("read-only file system (simulated)")

    def create(self, header: Any, records: Sequence[Record], *, durable: bool) -> None:
        self._check()
        self.inner.create(header, records, durable=durable)

    def append(self, session_id: str, records: Sequence[Record], *, durable: bool) -> None:
        self._check()
        self.inner.append(session_id, records, durable=durable)


async def _runtime_on(ctx: Context, runtime: Runtime, backend: Any) -> None:
    mount_persistence(ctx.child("persistence"), backend, batch_window_ms=WINDOW)
    await ctx.plugin(CheckpointPlugin)


@pytest.mark.parametrize("breaks_before", ["the-turn", "the-model-call"])
async def test_a_failed_flush_fails_closed_before_the_model_call(
    breaks_before: str, tmp_path: Path, runtimes: RuntimeFactory
) -> None:
    runtime = await runtimes(None)
    backend = _Broken(JsonlBackend(tmp_path))
    await _runtime_on(runtime.ctx, runtime, backend)
    runtime.model.add(reply("never sent"))
    agent = await runtime.agent("session-broken")
    if breaks_before == "the-turn":
        backend.broken = True
    else:

        def break_store(point: StepPoint) -> None:
            backend.broken = True  # at pre-step, before the model call's checkpoint

        runtime.ctx.on(PRE_STEP, break_store, global_=True)
    agent.followup("go")
    await agent.when_idle()
    assert runtime.model.requests == []
    ends = [e for e in agent.session.events if e.type == "turn/end"]
    assert ends[-1].data["reason"]["kind"] == "error"
    assert "read-only file system" in ends[-1].data["reason"]["error"]["message"]
    backend.broken = False  # the final drain may now store everything


async def test_a_failed_flush_fails_closed_before_the_tool_body(
    tmp_path: Path, runtimes: RuntimeFactory
) -> None:
    runtime = await runtimes(None)
    backend = _Broken(JsonlBackend(tmp_path))
    await _runtime_on(runtime.ctx, runtime, backend)
    ran: list[str] = []

    @tool
    async def effect(run: ToolRunContext) -> str:
        """Change the world."""
        ran.append("effect")
        return "changed"

    runtime.ctx.tools.register(effect)

    def break_store(options: GenerateOptions) -> bool:
        backend.broken = True  # after the model-call checkpoint, before the tool's
        return True

    runtime.model.add(reply(tool_call("effect"), expect=break_store), reply("done"))
    agent = await runtime.agent("session-broken-tool")
    agent.followup("go")
    await agent.when_idle()
    assert ran == []
    (result,) = [e for e in agent.session.events if e.type == "tool/result"]
    (block,) = Message.from_json(result.data["message"]).content
    assert isinstance(block, ToolResultBlock) and block.is_error
    assert text_of(block.content) == "Error: read-only file system (simulated)"
    # The next checkpoint (the model call) fails too: the turn ends in error.
    assert agent.session.events[-1].data["reason"]["kind"] == "error"
    assert runtime.model.remaining == 1
    backend.broken = False


class _Blocking:
    """A JSONL backend whose write of a `tool/call` waits until released."""

    def __init__(self, inner: SessionBackend) -> None:
        self.inner = inner
        self.name = inner.name
        self.store_id = inner.store_id
        self.blocked = threading.Event()
        self.release = threading.Event()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def append(self, session_id: str, records: Sequence[Record], *, durable: bool) -> None:
        if any(r.type == "tool/call" for r in records):
            self.blocked.set()
            self.release.wait(10)
        self.inner.append(session_id, records, durable=durable)


async def test_a_call_cancelled_during_its_flush_never_starts(
    tmp_path: Path, runtimes: RuntimeFactory
) -> None:
    runtime = await runtimes(None)
    backend = _Blocking(JsonlBackend(tmp_path))
    await _runtime_on(runtime.ctx, runtime, backend)
    ran: list[str] = []

    @tool
    async def effect(run: ToolRunContext) -> str:
        """Change the world."""
        ran.append("effect")
        return "changed"

    runtime.ctx.tools.register(effect)
    runtime.model.add(reply(tool_call("effect")))
    agent = await runtime.agent("session-cancelled")
    agent.followup("go")
    await asyncio.to_thread(backend.blocked.wait, 10)
    agent.cancel(USER_CANCEL)
    backend.release.set()
    await agent.when_idle()
    assert ran == []
    (result,) = [e for e in agent.session.events if e.type == "tool/result"]
    assert result.data["error"]["code"] == "ABORTED_BEFORE_DISPATCH"
    assert agent.session.events[-1].data["reason"]["kind"] == "aborted"


async def test_without_persistence_checkpoints_change_nothing(runtimes: RuntimeFactory) -> None:
    runtime = await runtimes(None)
    await runtime.ctx.plugin(CheckpointPlugin)
    runtime.model.add(reply("hi"))
    agent = await runtime.agent()
    agent.followup("hello")
    await agent.when_idle()
    assert agent.session.events[-1].data["reason"] == {"kind": "completed"}
