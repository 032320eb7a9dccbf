"""`dsh run`: one task, streamed; the exit code says how the turn ended."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..agent import USER_CANCEL, Agent, run_prompt
from ..llm import clean_text
from ..session import SESSION_EVENT, SessionEventPayload
from ._hooks import trust_note, untrusted_files
from ._render import TerminalRenderer, describe_end
from ._runtime import (
    build_profile,
    check_credentials,
    create_agent,
    resolve_route,
    resume_agent,
    start_runtime,
)

if TYPE_CHECKING:
    from rich.console import Console

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
    trust: bool = False
    """`--trust-workspace`: run the workspace's hooks (and MCP servers) for this run."""
    sandbox: str | None = None


async def run_task(options: RunOptions) -> int:
    from rich.console import Console

    out = Console(highlight=False)
    err = Console(stderr=True, highlight=False)
    profile = build_profile(
        options.profile, yes=options.yes, trust_workspace=options.trust, sandbox=options.sandbox
    )
    route = resolve_route(profile, options.provider, options.model)
    check_credentials(route)
    cwd = (options.cwd or Path.cwd()).resolve()
    untrusted = [] if options.trust or options.resume else untrusted_files(cwd)
    if untrusted:
        remedy = "pass --trust-workspace, or trust it once in dsh chat"
        err.print(f"note: {trust_note(cwd, untrusted)}: {remedy}", style="yellow", markup=False)
    ctx = await start_runtime(profile, route)
    try:
        if options.resume:
            handle = await resume_agent(ctx, route, options.resume)
        else:
            handle = await create_agent(ctx, route, cwd)
        agent = handle.agent
        renderer = TerminalRenderer(out, err)
        if options.banner:
            err.print(options.banner, style="bold yellow", markup=False)
        ctx.on(SESSION_EVENT, _printer(agent, renderer, as_json=options.json))
        with _Interrupts(agent, err) as interrupts:
            try:
                if not options.json:
                    renderer.waiting()
                # argv is surrogate-escaped: b"\xff" arrives as "\udcff"
                result = await run_prompt(agent, clean_text(options.task))
            except asyncio.CancelledError:
                renderer.close()
                err.print(f"interrupted · session {agent.id}", style="yellow")
                return EXIT_INTERRUPTED
        renderer.close()
        outcome = describe_end(result.reason)
        style = "green" if result.finish_reason == "completed" else "red"
        err.print(f"session {agent.id} · {outcome}", style=style, markup=False, soft_wrap=True)
        if result.finish_reason == "completed":
            return EXIT_OK
        return EXIT_INTERRUPTED if interrupts.count else EXIT_TURN_FAILED
    finally:
        await ctx.owner.dispose()


def _printer(
    agent: Agent, renderer: TerminalRenderer, *, as_json: bool
) -> Callable[[SessionEventPayload], None]:
    """The `session/event` listener that shows the agent's events (or prints them as JSON)."""

    def on_event(payload: SessionEventPayload) -> None:
        if payload.session is not agent.session:
            return
        if as_json:
            sys.stdout.write(json.dumps(payload.event.to_json(), ensure_ascii=False) + "\n")
            sys.stdout.flush()
        else:
            renderer.event(payload.event)

    return on_event


class _Interrupts:
    """Ctrl-C while the task runs: the first cancels the turn, the second the whole run."""

    def __init__(self, agent: Agent, err: Console) -> None:
        self.agent = agent
        self.err = err
        self.count = 0
        self.main = asyncio.current_task()
        self.loop = asyncio.get_running_loop()

    def __enter__(self) -> _Interrupts:
        self.loop.add_signal_handler(signal.SIGINT, self.interrupt)
        return self

    def __exit__(self, *exc: object) -> None:
        self.loop.remove_signal_handler(signal.SIGINT)

    def interrupt(self) -> None:
        self.count += 1
        if self.count == 1:
            self.err.print("\ncancelling the turn… (Ctrl-C again to quit)", style="yellow")
            self.agent.cancel(USER_CANCEL)
        elif self.main is not None:
            self.main.cancel()
