"""A plugin the runtime child process loads by `module:attr`: a ScriptedModel from config."""

from __future__ import annotations

import asyncio
import contextlib
import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from dsh import Context
from dsh.llm import TokenUsage
from dsh.persistence import PERSISTENCE_WRITTEN, Written
from dsh.testing import ScriptedModel, failure, reply, tool_call
from dsh.tools import ToolRunContext, tool


class ScriptConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    provider: str = "scripted"
    script: list[Any] = []
    context_window: int | None = None


def _entry(item: Any) -> Any:
    if isinstance(item, str):
        return reply(item)
    if "fail" in item:
        return reply(failure(item["fail"], item.get("message")))
    # `usage: [fresh input, output, cache hits]`, as the provider would report it.
    fresh, output, hits = item.get("usage") or (0, 0, None)
    usage = TokenUsage(fresh, output, hits) if "usage" in item else None
    if "tool" in item:
        call = tool_call(item["tool"], item.get("args", {}))
        return reply(call, delay=item.get("delay", 0.0), usage=usage)
    if "tools" in item:  # several calls in one answer
        calls = [tool_call(c["tool"], c.get("args", {})) for c in item["tools"]]
        return reply(*calls, usage=usage)
    return reply(
        item.get("text", ""),
        delay=item.get("delay", 0.0),
        hang=item.get("hang", False),
        usage=usage,
        piece_chars=item.get("piece_chars"),
    )


class ScriptedPlugin:
    name = "scripted"
    Config = ScriptConfig

    @staticmethod
    def apply(ctx: Context, config: ScriptConfig) -> None:
        model = ScriptedModel(
            [_entry(item) for item in config.script], context_window=config.context_window
        )
        ctx.owner.effect(model.install(ctx, provider=config.provider))

        @tool
        def shout(text: str) -> str:
            """Upper-case a text."""
            return text.upper()

        ctx.tools.register(shout)
        ctx.tools.register(steps)


@tool
async def steps(count: int, gate: str, *, run: ToolRunContext) -> str:
    """Report `count` steps as progress, then wait for a line on the FIFO `gate`."""
    for step in range(1, count + 1):
        run.progress(f"step {step} of {count}", fraction=step / count)
    await asyncio.to_thread(Path(gate).read_text)
    return f"{count} steps done"


class WrittenConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    fifo: str


class WrittenProbe:
    """Writes `<session id> <through seq>` to the FIFO `fifo` (which the test reads) after
    each batch the store wrote (`persistence/written`): the test learns what is on disk as
    it lands, polling nothing."""

    name = "written_probe"
    Config = WrittenConfig

    @staticmethod
    def apply(ctx: Context, config: WrittenConfig) -> None:
        fd = os.open(config.fifo, os.O_WRONLY | os.O_NONBLOCK)  # the test reads it already
        ctx.owner.effect(lambda: os.close(fd))

        def written(event: Written) -> None:
            with contextlib.suppress(BlockingIOError):  # a test that stopped reading
                os.write(fd, f"{event.session_id} {event.through_seq}\n".encode())

        ctx.on(PERSISTENCE_WRITTEN, written)
