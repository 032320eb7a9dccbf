"""`dsh run`: one task, streamed; the exit code says how the turn ended."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import stat
import sys
from collections.abc import Iterator
from dataclasses import dataclass

from ..agent import USER_CANCEL, Agent, RunResult, run_prompt
from ..session import SESSION_EVENT, SessionEventPayload
from ._format import describe_end
from ._render import Renderer, Surface
from ._runtime import CliError, Options, Route, failure_advice, start
from ._sessions import open_agent

EXIT_OK = 0
EXIT_TURN_FAILED = 1
EXIT_INTERRUPTED = 130


@dataclass(frozen=True, slots=True)
class RunOptions(Options):
    task: str | None = None
    json: bool = False
    banner: str | None = None


def read_task(task: str | None) -> str:
    """The task: the argument, or standard input for `-` (or no argument and a pipe). An
    argument with a pipe or file on stdin gets that text after it (`git diff | dsh run
    "review this"`)."""
    if task is not None and task != "-":
        piped = sys.stdin.read().strip() if _piped() else ""
        return f"{task}\n\n{piped}" if piped else task
    if task is None and sys.stdin.isatty():
        raise CliError("no task: pass it as an argument, or `-` to read it from standard input")
    text = sys.stdin.read().strip()
    if not text:
        raise CliError("no task: standard input was empty")
    return text


def _piped() -> bool:
    """Whether stdin is a pipe or a file (not a terminal, not /dev/null)."""
    try:
        mode = os.fstat(sys.stdin.fileno()).st_mode
    except (OSError, ValueError):
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISREG(mode)


async def run_task(options: RunOptions) -> int:
    task = read_task(options.task)
    ctx, route, cwd = await start(options)
    try:
        handle = await open_agent(ctx, route, cwd, resume=options.resume, latest=options.latest)
        agent = handle.agent
        with _surface(options) as surface:
            renderer = Renderer(surface, markdown=_markdown(options), outcomes=False)
            if options.banner:
                surface.note(options.banner, "bold yellow")

            def on_event(payload: SessionEventPayload) -> None:
                if payload.session is not agent.session:
                    return
                if options.json:
                    sys.stdout.write(json.dumps(payload.event.to_json(), ensure_ascii=False))
                    sys.stdout.write("\n")
                    sys.stdout.flush()
                else:
                    renderer.event(payload.event)

            ctx.on(SESSION_EVENT, on_event)
            result = await _run_interruptibly(agent, task, surface)
            renderer.close()
        return _report(agent, result, route)
    finally:
        await ctx.owner.dispose()


async def _run_interruptibly(agent: Agent, task: str, surface: Surface) -> RunResult | None:
    """Run the task; the first Ctrl-C cancels the turn, the second gives up waiting (None)."""
    interrupts = 0
    main = asyncio.current_task()

    def on_interrupt() -> None:
        nonlocal interrupts
        interrupts += 1
        if interrupts == 1:
            surface.note("cancelling the turn… (Ctrl-C again to quit)", "yellow")
            agent.cancel(USER_CANCEL)
        elif main is not None:
            main.cancel()

    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGINT, on_interrupt)
    try:
        return await run_prompt(agent, task)
    except asyncio.CancelledError:
        return None
    finally:
        loop.remove_signal_handler(signal.SIGINT)


def _report(agent: Agent, result: RunResult | None, route: Route) -> int:
    from rich.console import Console

    err = Console(stderr=True, highlight=False)
    if result is None:
        err.print(f"interrupted · session {agent.id}", style="yellow", markup=False)
        return EXIT_INTERRUPTED
    outcome = describe_end(result.reason)
    ok = result.finish_reason == "completed"
    err.print(
        f"session {agent.id} · {outcome}",
        style="green" if ok else "red",
        markup=False,
        soft_wrap=True,
    )
    advice = failure_advice(result.reason, route)
    if advice:
        err.print(advice, style="yellow", markup=False, soft_wrap=True)
    if ok:
        return EXIT_OK
    cancelled = result.reason.get("kind") == "aborted"
    return EXIT_INTERRUPTED if cancelled else EXIT_TURN_FAILED


def _markdown(options: RunOptions) -> bool:
    return not options.plain and sys.stdout.isatty()


@contextlib.contextmanager
def _surface(options: RunOptions) -> Iterator[Surface]:
    """A terminal with a live area when stdout is one, else plain pipes."""
    from ._surfaces import PipeSurface, TerminalSurface

    if options.json or not sys.stdout.isatty():
        yield PipeSurface()
        return
    from rich.console import Console

    with TerminalSurface(Console(highlight=False), markdown=_markdown(options)) as surface:
        yield surface
