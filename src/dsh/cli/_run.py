"""`dsh run`: one task, streamed; the exit code says how the turn ended."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from dataclasses import dataclass
from pathlib import Path

from ..agent import USER_CANCEL, run_prompt
from ..llm import clean_text
from ..session import SESSION_EVENT, SessionEventPayload
from ._render import TerminalRenderer, describe_end
from ._runtime import (
    build_profile,
    check_credentials,
    create_agent,
    resolve_route,
    resume_agent,
    start_runtime,
)

EXIT_OK = 0
EXIT_TURN_FAILED = 1
EXIT_INTERRUPTED = 130


@dataclass(frozen=True, slots=True)
class RunOptions:
    task: str
    profile: list[Path] | None = None
    provider: str | None = None
    model: str | None = None
    cwd: Path | None = None
    yes: bool = False
    json: bool = False
    resume: str | None = None
    banner: str | None = None


async def run_task(options: RunOptions) -> int:
    from rich.console import Console

    out = Console(highlight=False)
    err = Console(stderr=True, highlight=False)
    profile = build_profile(options.profile, yes=options.yes)
    route = resolve_route(profile, options.provider, options.model)
    check_credentials(route)
    ctx = await start_runtime(profile, route)
    try:
        cwd = (options.cwd or Path.cwd()).resolve()
        if options.resume:
            handle = await resume_agent(ctx, route, options.resume)
        else:
            handle = await create_agent(ctx, route, cwd)
        agent = handle.agent
        renderer = TerminalRenderer(out, err)
        if options.banner:
            err.print(options.banner, style="bold yellow", markup=False)

        def on_event(payload: SessionEventPayload) -> None:
            if payload.session is not agent.session:
                return
            if options.json:
                sys.stdout.write(json.dumps(payload.event.to_json(), ensure_ascii=False) + "\n")
                sys.stdout.flush()
            else:
                renderer.event(payload.event)

        ctx.on(SESSION_EVENT, on_event)
        interrupts = 0
        main = asyncio.current_task()

        def on_interrupt() -> None:
            nonlocal interrupts
            interrupts += 1
            if interrupts == 1:
                err.print("\ncancelling the turn… (Ctrl-C again to quit)", style="yellow")
                agent.cancel(USER_CANCEL)
            elif main is not None:
                main.cancel()

        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGINT, on_interrupt)
        try:
            if not options.json:
                renderer.waiting()
            result = await run_prompt(agent, clean_text(options.task))  # argv is surrogate-escaped
        except asyncio.CancelledError:
            renderer.close()
            err.print(f"interrupted · session {agent.id}", style="yellow")
            return EXIT_INTERRUPTED
        finally:
            loop.remove_signal_handler(signal.SIGINT)
        renderer.close()
        outcome = describe_end(result.reason)
        style = "green" if result.finish_reason == "completed" else "red"
        err.print(f"session {agent.id} · {outcome}", style=style, markup=False, soft_wrap=True)
        if result.finish_reason == "completed":
            return EXIT_OK
        return EXIT_INTERRUPTED if interrupts else EXIT_TURN_FAILED
    finally:
        await ctx.owner.dispose()
