"""The child of the crash test: a multi-step agent with persistence on, killed by its parent.

Usage: `python crash_child.py ROOT SESSION_ID BACKEND WINDOW_MS`. Prints `ready` once the agent
exists, then the last stored seq after every write (`persistence/written`: the bytes reached
the store before the line was printed), then `done`.
"""

from __future__ import annotations

import asyncio
import sys


async def main(root: str, session_id: str, backend: str, window_ms: float) -> None:
    from dsh.agent import AgentOptions, CreateAgentOptions
    from dsh.persistence import PERSISTENCE_WRITTEN, Written
    from dsh.profiles import CORE_ROWS, boot, load_profile
    from dsh.session import SessionMeta
    from dsh.testing import ScriptedModel, reply, tool_call
    from dsh.tools import tool

    rows: list[dict[str, object]] = []
    for row in CORE_ROWS:
        rows.append(dict(row))
        if row["id"] == "sessions":
            config = {"root": root, "backend": backend, "batch_window_ms": window_ms}
            rows.append(
                {"id": "persistence", "name": "dsh.persistence:PersistencePlugin", "config": config}
            )
    rows.append({"id": "checkpoints", "name": "dsh.plugins.checkpoints:CheckpointPlugin"})
    ctx = await boot(load_profile(base=rows))

    def written(event: Written) -> None:
        print(event.through_seq, flush=True)

    ctx.on(PERSISTENCE_WRITTEN, written)

    @tool
    async def work(n: int) -> str:
        """Exclusive work with an effect."""
        # real time: the parent kills this process at a random moment of its run (as the
        # model's `delay=`s do, the work's duration spreads those moments over the steps)
        await asyncio.sleep(0.03)
        return f"worked {n}"

    @tool(concurrency_safe=True)
    async def look(n: int) -> str:
        """A read that may overlap others."""
        await asyncio.sleep(0.01)  # real time: as `work`'s
        return f"looked {n}"

    ctx.tools.register(work)
    ctx.tools.register(look)
    model = ScriptedModel(
        [
            reply(tool_call("work", {"n": 1}), tool_call("work", {"n": 2}), delay=0.01),
            reply(tool_call("look", {"n": 1}), tool_call("look", {"n": 2}), delay=0.01),
            reply("a longer answer, streamed in many small pieces " * 3, delay=0.004),
            reply(tool_call("work", {"n": 3}), delay=0.01),
            reply("the second answer", delay=0.01),
        ]
    )
    model.install(ctx)
    handle = await ctx.agents.create(
        CreateAgentOptions(
            session_id,
            SessionMeta(cwd="/tmp/dsh-crash-test"),
            None,
            AgentOptions(provider="scripted", model="scripted"),
        )
    )
    print("ready", flush=True)
    agent = handle.agent
    agent.followup("first task")
    agent.followup("second task")  # queued behind the first
    await agent.when_idle()
    await handle.dispose()
    await ctx.owner.dispose()
    print("done", flush=True)


if __name__ == "__main__":
    root, session_id, backend, window = sys.argv[1:5]
    asyncio.run(main(root, session_id, backend, float(window)))
