"""The child of the claimed-prompt crash tests: an agent that stops at its first pre-step,
when the turn's claim of the prompt is on disk and the step that logs the prompt as a
`user/message` is not. It prints `claimed` there and waits to be killed.

The checkpoints commit a step boundary once, before the model call; a pre-step listener
with its own model call (compaction's) flushes the claim earlier. The pause listener
flushes as such a call would, which opens the window this test needs.

A test runs it with `run_until_claimed(*args)`: `agent ROOT SESSION_ID PROMPT` (an agent
on a JSONL root), or `batch ROOT TASKS OUT` (`dsh.batch.run_async` with the pause profile).
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

from dsh import Context
from dsh.agent import PRE_STEP, StepPoint

PAUSE_ROW = {"id": "pause-at-pre-step", "name": "tests.persistence.claim_child:PauseAtPreStep"}


class PauseAtPreStep:
    """Listens at `agent/pre-step`, flushes the session as a compaction model call would
    (so the claim is durable when it says `claimed`), then never returns."""

    name = "pause-at-pre-step"

    @staticmethod
    def apply(ctx: Context, config: None) -> None:
        async def pause(point: StepPoint) -> None:
            await ctx.sessions.flush(point.agent.session)
            print("claimed", flush=True)
            await asyncio.Event().wait()

        ctx.on(PRE_STEP, pause, global_=True)


async def agent(root: str, session_id: str, prompt: str) -> None:
    from dsh.agent import AgentOptions, CreateAgentOptions
    from dsh.profiles import CORE_ROWS, boot, load_profile
    from dsh.session import SessionMeta

    persistence = {"id": "persistence", "name": "persistence", "config": {"root": root}}
    rows = [*CORE_ROWS, persistence, {"id": "checkpoints", "name": "checkpoints"}, PAUSE_ROW]
    ctx = await boot(load_profile(base=rows))
    meta = SessionMeta(cwd="/tmp/dsh-claim-test")
    options = AgentOptions(provider="scripted", model="scripted")
    handle = await ctx.agents.create(CreateAgentOptions(session_id, meta, None, options))
    handle.agent.followup(prompt)
    await handle.agent.when_idle()


async def batch(root: str, tasks: str, out: str) -> None:
    import yaml

    from dsh.batch import read_tasks, run_async

    profile = Path(out).with_name("pause.yml")
    profile.write_text(yaml.safe_dump([PAUSE_ROW]))
    await run_async(read_tasks(Path(tasks)), store=root, out=Path(out), profiles=[str(profile)])


REPO = Path(__file__).resolve().parents[2]


async def run_until_claimed(*args: str, **env: str) -> None:
    """Run `claim_child.py ARGS`; SIGKILL it as soon as its turn's claim of the prompt is on
    disk and the prompt is not yet logged (it says `claimed` there and waits)."""
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        __file__,
        *args,
        stdout=asyncio.subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO)]), **env},
    )
    assert child.stdout is not None
    try:
        line = await asyncio.wait_for(child.stdout.readline(), 120)
    finally:
        child.kill()
        await child.wait()
    assert line == b"claimed\n"


if __name__ == "__main__":
    mode, *args = sys.argv[1:]
    asyncio.run(agent(*args) if mode == "agent" else batch(*args))
