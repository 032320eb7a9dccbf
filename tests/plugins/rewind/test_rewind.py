"""Rewind through the Python API: checkpoints at each prompt, code / conversation / both,
undo, outside changes kept, the user's repository left alone."""

from __future__ import annotations

import re
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

import dsh
from dsh.events import TurnStartEvent, UserMessageEvent, append
from dsh.plugins.rewind import (
    REWIND,
    GitError,
    RewindConfig,
    RewindError,
    Rewinds,
    prompt_lines,
)
from dsh.session import Session, SessionHeader
from dsh.testing import ScriptedModel, reply, tool_call

from .scenario import PROMPTS, TMP_REFUSED, script, tree_hash, workspace

SID = "session-rewind"


def allow(request: dsh.ApprovalRequest) -> dsh.Decision:
    return dsh.Decision.once()


class Run:
    """The scenario played: the workspace, the agent, the model, the tree before each prompt."""

    def __init__(self, ws: Path, agent: dsh.Agent[str], model: ScriptedModel) -> None:
        self.ws, self.agent, self.model = ws, agent, model
        self.before: list[str] = []


@pytest.fixture
async def run(tmp_path: Path) -> AsyncIterator[Run]:
    ws = workspace(tmp_path)
    model = ScriptedModel(script())
    async with dsh.Agent(model, builtin_tools=True, approval=allow, cwd=ws) as agent:
        played = Run(ws, agent, model)
        for prompt in PROMPTS:
            played.before.append(tree_hash(ws))
            await agent.run(prompt, session=SID)
        yield played


async def test_the_scenario_changed_every_kind_of_file(run: Run) -> None:
    ws = run.ws
    assert (ws / "a.txt").read_bytes() == b"beta\n"
    assert (ws / "b.txt").read_bytes() == b"bee\n"
    assert not (ws / "gone.txt").exists()
    assert (ws / "logo.bin").read_bytes() == b"\x01\xff\x00"
    prompts = await run.agent.prompts(SID)
    assert [(p.turn, p.text) for p in prompts] == list(enumerate(PROMPTS, 1))
    assert [[(c.status, c.path) for c in p.changes] for p in prompts] == [
        [("M", "a.txt")],
        [("A", "b.txt")],
        [("D", "gone.txt")],
        [("M", "logo.bin")],
    ]
    diff = await run.agent.diff(SID, 1)
    assert "-alpha\n+beta\n" in diff.patch


async def test_code_rewinds_to_each_prompt_byte_for_byte_and_undoes(run: Run) -> None:
    final = tree_hash(run.ws)
    for number, expected in enumerate(run.before, 1):
        report = await run.agent.rewind(SID, number, mode="code")
        assert tree_hash(run.ws) == expected, number
        assert report.kept == ()
        await run.agent.rewind(SID, undo=True)
        assert tree_hash(run.ws) == final, number
    assert (run.ws / "noise.log").read_bytes() == b"ignored\n"  # ignored: never touched


async def test_rewinding_back_forward_goes_through_the_later_prompts(run: Run) -> None:
    await run.agent.rewind(SID, 1, mode="code")
    assert tree_hash(run.ws) == run.before[0]
    await run.agent.rewind(SID, 3, mode="code")
    assert tree_hash(run.ws) == run.before[2]
    await run.agent.rewind(SID, undo=True)
    assert tree_hash(run.ws) == run.before[0]


async def test_a_dry_run_changes_nothing(run: Run) -> None:
    final = tree_hash(run.ws)
    report = await run.agent.rewind(SID, 1, dry_run=True)
    assert report.dry_run and tree_hash(run.ws) == final
    assert sorted(c.path for c in report.restored) == ["a.txt", "b.txt", "gone.txt", "logo.bin"]
    assert "+alpha" in report.patch
    assert [p.active for p in await run.agent.prompts(SID)] == [True] * 4


async def test_an_outside_change_is_reported_and_kept_unless_forced(run: Run) -> None:
    (run.ws / "a.txt").write_bytes(b"mine\n")  # the user, after the last turn
    report = await run.agent.rewind(SID, 1, mode="code")
    assert report.kept == ("a.txt",)
    assert (run.ws / "a.txt").read_bytes() == b"mine\n"
    assert not (run.ws / "b.txt").exists() and (run.ws / "gone.txt").exists()
    await run.agent.rewind(SID, undo=True)
    assert (run.ws / "a.txt").read_bytes() == b"mine\n"
    forced = await run.agent.rewind(SID, 1, mode="code", force=True)
    assert "a.txt" in [c.path for c in forced.restored]
    assert tree_hash(run.ws) == run.before[0]


async def test_the_conversation_rewind_sends_only_the_history_before_the_prompt(run: Run) -> None:
    final = tree_hash(run.ws)
    report = await run.agent.rewind(SID, 3, mode="conversation")
    assert report.to_seq is not None and tree_hash(run.ws) == final
    run.model.add(reply("again"))
    await run.agent.run("instead", session=SID)
    sent = [m.text for m in run.model.last_request.messages if m.role == "user"]  # type: ignore[union-attr]
    prompts = [t for t in sent if t in (*PROMPTS, "instead")]
    assert prompts == [PROMPTS[0], PROMPTS[1], "instead"]
    actives = [p.active for p in await run.agent.prompts(SID)]
    assert actives == [True, True, False, False, True]


async def test_undoing_a_conversation_rewind_brings_the_later_turns_back(run: Run) -> None:
    await run.agent.rewind(SID, 2, mode="both")
    assert tree_hash(run.ws) == run.before[1]
    await run.agent.rewind(SID, undo=True)
    run.model.add(reply("again"))
    await run.agent.run("next", session=SID)
    sent = [m.text for m in run.model.last_request.messages if m.role == "user"]  # type: ignore[union-attr]
    assert [t for t in sent if t in (*PROMPTS, "next")] == [*PROMPTS, "next"]


async def test_bad_requests_say_what_to_do(run: Run) -> None:
    with pytest.raises(RewindError, match="no prompt 9"):
        await run.agent.rewind(SID, 9)
    with pytest.raises(RewindError, match="unknown rewind mode"):
        await run.agent.rewind(SID, 1, mode="all")  # type: ignore[arg-type]
    with pytest.raises(RewindError, match="there is no rewind to undo"):
        await run.agent.rewind(SID, undo=True)


def user_repository(ws: Path, fsmonitor: Path) -> None:
    """The workspace as the user's git repository, with an fsmonitor hook of theirs."""
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    subprocess.run(["git", "-C", str(ws), "config", "core.fsmonitor", str(fsmonitor)], check=True)


async def test_nothing_of_the_users_git_runs_or_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = workspace(tmp_path)
    mark = tmp_path / "ran"
    hook = tmp_path / "hook.sh"
    hook.write_text(f"#!/bin/sh\ntouch {mark}\n")
    hook.chmod(0o755)
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text(f"[core]\n\tfsmonitor = {hook}\n\thooksPath = {tmp_path}\n")
    monkeypatch.setenv("HOME", str(home))
    user_repository(ws, hook)
    before = tree_hash(ws / ".git", everything=True)
    model = ScriptedModel(script())
    async with dsh.Agent(model, builtin_tools=True, approval=allow, cwd=ws) as agent:
        for prompt in PROMPTS:
            await agent.run(prompt, session=SID)
        await agent.rewind(SID, 1)
    assert not mark.exists()
    assert tree_hash(ws / ".git", everything=True) == before
    assert (ws / "a.txt").read_bytes() == b"alpha\n"


async def test_a_temporary_folder_is_not_recorded_and_a_rewind_says_why(tmp_path: Path) -> None:
    model = ScriptedModel(["hi"])
    async with dsh.Agent(model, builtin_tools=True, approval=allow, cwd="/tmp") as agent:
        await agent.run("hi", session=SID)
        assert await agent.prompts(SID) == []
        with pytest.raises(RewindError, match=re.escape(f"no checkpoints: {TMP_REFUSED}")):
            await agent.rewind(SID, 1)
        with pytest.raises(RewindError, match=re.escape(TMP_REFUSED)):
            await agent.diff(SID)
        runtime = await agent._ensure_runtime()
        async with runtime.using(SID) as loaded:
            events = loaded.session.events[:]
    # another process (a fresh service) reads the reason from the log
    stored = Session.create(SID, seed=events, header=SessionHeader(id=SID, created_at=0))
    fresh = Rewinds(RewindConfig(), tmp_path / "store")
    assert fresh.no_checkpoints(stored) == f"session {SID} has no checkpoints: {TMP_REFUSED}"


async def test_a_checkpoint_over_the_size_cap_is_refused_with_its_reason(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    header = SessionHeader(id=SID, created_at=0, cwd=str(ws))
    session = Session.create(SID, header=header)
    rewinds = Rewinds(RewindConfig(max_files=2), tmp_path / "store")
    with pytest.raises(GitError, match="over 2"):
        await rewinds.checkpoint(session, "turn", 1)
    assert not rewinds.covers(session)
    again = Session.create(SID, seed=session.events[:], header=header)
    line = Rewinds(RewindConfig(), tmp_path / "store").no_checkpoints(again)
    assert line.startswith(f"session {SID} has no checkpoints: ") and "(over 2)" in line


async def test_a_turn_whose_end_checkpoint_was_refused_says_so(tmp_path: Path) -> None:
    """Its files as far as they were recorded, and why the rest is not: not a bare '-'."""
    ws = workspace(tmp_path)
    session = Session.create(SID, header=SessionHeader(id=SID, created_at=0, cwd=str(ws)))
    append(session, TurnStartEvent(turn=1))
    append(session, UserMessageEvent(message=dsh.user_message("make files"), surface_op="append"))
    rewinds = Rewinds(RewindConfig(max_files=8), tmp_path / "store")
    await rewinds.checkpoint(session, "turn", 1)
    for number in range(9):
        (ws / f"new-{number}.txt").write_text(str(number))
    with pytest.raises(GitError, match="over 8"):
        await rewinds.checkpoint(session, "end", 1)
    (prompt,) = await rewinds.prompts(session)
    assert prompt.changes == () and prompt.unrecorded is not None and "over 8" in prompt.unrecorded
    assert prompt_lines([prompt])[0].endswith(f"- (not all recorded: {prompt.unrecorded})")
    assert (await rewinds.diff(session, 1)).unrecorded == prompt.unrecorded


async def test_a_fork_rewinds_only_its_own_prompts(run: Run) -> None:
    runtime = await run.agent._ensure_runtime()
    rewinds = runtime.ctx.require(REWIND)
    async with runtime.using(SID) as parent:
        seed = parent.session.events[:]
    header = SessionHeader(
        id="session-child",
        created_at=0,
        cwd=str(run.ws),
        parent_session=SID,
        seed_length=len(seed),
    )
    child = Session.create("session-child", seed=seed, header=header)
    assert await rewinds.prompts(child) == []
    with pytest.raises(RewindError, match="has no checkpoints"):
        await rewinds.rewind(child, 1)


async def test_a_turn_kept_open_by_a_stop_hook_ends_with_its_last_step(tmp_path: Path) -> None:
    from dsh.agent import TURN_STOPPING, Continue, StopDecision, TurnStopping
    from dsh.kernel import Next
    from dsh.testing import tool_call

    ws = workspace(tmp_path)
    model = ScriptedModel(
        [
            reply(tool_call("write", {"file_path": str(ws / "one.txt"), "content": "1\n"})),
            reply("first"),
            reply(tool_call("write", {"file_path": str(ws / "two.txt"), "content": "2\n"})),
            reply("second"),
        ]
    )
    kept_open: list[int] = []

    async def once_more(
        payload: TurnStopping, nxt: Next[TurnStopping, StopDecision]
    ) -> StopDecision:
        if not kept_open:
            kept_open.append(payload.turn)
            return Continue("one more step")
        return await nxt()

    async with dsh.Agent(model, builtin_tools=True, approval=allow, cwd=ws) as agent:
        runtime = await agent._ensure_runtime()
        runtime.ctx.on(TURN_STOPPING, once_more)  # after the rewind plugin's listener
        await agent.run("write two files", session=SID)
        diff = await agent.diff(SID)
    assert kept_open and sorted(c.path for c in diff.changes) == ["one.txt", "two.txt"]


async def test_a_tool_that_runs_beside_others_gets_its_checkpoint_too(tmp_path: Path) -> None:
    """Running beside other calls says nothing of writing (a subagent's delegation does
    both): only the `skip` list goes without a checkpoint before it."""
    ws = workspace(tmp_path)

    @dsh.tool(concurrency_safe=True)
    def stamp() -> str:
        """Change a.txt."""
        (ws / "a.txt").write_bytes(b"stamped\n")
        return "ok"

    model = ScriptedModel([reply(tool_call("stamp")), reply("done")])
    async with dsh.Agent(model, tools=[stamp], approval=allow, cwd=ws) as agent:
        await agent.run("stamp it", session=SID)
        [prompt] = await agent.prompts(SID)
        assert [(c.status, c.path) for c in prompt.changes] == [("M", "a.txt")]
        report = await agent.rewind(SID, 1, mode="code")
    assert report.kept == () and (ws / "a.txt").read_bytes() == b"alpha\n"
