"""`dsh run`: one task, streamed; the exit code says how the turn ended."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import stat
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

from .._context import Context
from ..agent import USER_CANCEL, Agent, RunResult, run_prompt
from ..assembly import Route, start
from ..kernel import Aborted, CancelSignal
from ..llm import clean_text
from ..plugins.plan_mode import PLAN_MODE, exit_plan_mode
from ..plugins.subagents import SUBAGENTS, SubagentRuntime
from ..plugins.usage import budget_stop
from ..session import SESSION_EVENT, SessionEventPayload
from ..tools import TOOL_PROGRESS_EVENT, ToolExecution, ToolProgress
from ._format import describe_end
from ._headless import Headless, OutputFormat
from ._model import resume_switch
from ._render import Renderer, Surface
from ._runtime import CliError, Options, failure_advice, prepare, pricer, session_cost
from ._sessions import open_agent
from ._trust import trust_note, untrusted_files

EXIT_OK = 0
EXIT_TURN_FAILED = 1
EXIT_DENIED = 3
"""The turn completed, but tool calls that needed approval were refused (no `--yes`)."""
EXIT_BUDGET = 4
"""The run stopped at a usage limit (`--max-steps`, `--max-cost`, … or the profile's)."""
EXIT_INTERRUPTED = 130


class RunOptions(Options, frozen=True):
    task: str | None = None
    json: bool = False
    """`--json`: every session event, one per line, as the log holds it."""
    output_format: OutputFormat = "text"
    """`--output-format`: `json` / `stream-json` in Claude Code's headless shapes."""
    banner: str | None = None
    plan: bool = False
    """`--plan`: start in plan mode (only reading tools run until a plan is approved)."""


def read_task(task: str | None) -> str:
    """The task: the argument, or standard input for `-` (or no argument and a pipe). An
    argument with a pipe or file on stdin gets that text after it (`git diff | dsh run
    "review this"`)."""
    if task is not None and task != "-":
        piped = sys.stdin.read().strip() if _piped() else ""
        if not task.strip() and not piped:
            raise CliError("no task: the task given is empty (say what to do, or `-` for stdin)")
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
    started = time.monotonic()
    # argv and stdin are surrogate-escaped: an undecodable byte (b"\xff") arrives as "\udcff".
    task = clean_text(read_task(options.task))
    assembly, route = prepare(options)
    cwd = assembly.workspace
    resuming = options.resume is not None or options.latest
    untrusted = [] if options.trust or resuming else untrusted_files(cwd)
    ctx = await start(assembly)
    try:
        _check_cost_limit(ctx, options, route)
        handle = await open_agent(ctx, route, cwd, resume=options.resume, latest=options.latest)
        agent = handle.agent
        with _surface(options) as surface:
            renderer = Renderer(
                surface,
                markdown=_markdown(options),
                outcomes=False,
                cost=pricer(ctx),
                session_cost=session_cost(ctx, lambda: agent),
            )
            if untrusted:
                remedy = "pass --trust-workspace, or trust it once in dsh chat"
                surface.note(f"dsh: note: {trust_note(cwd, untrusted)}: {remedy}", "yellow")
            if options.banner:
                surface.note(options.banner, "bold yellow")
            switched = resume_switch(agent, options.model) if resuming and options.model else None
            if switched is not None:
                surface.note(*switched)
            headless = await _headless(options, ctx, agent, route, cwd, started)
            ctx.on(SESSION_EVENT, _printer(agent, renderer, options, headless))
            if headless is None and not options.json:
                ctx.on(TOOL_PROGRESS_EVENT, _progress(agent, renderer))
            denied = _unanswered(ctx)
            if options.plan:
                _plan_first(ctx, agent)
            with _Interrupts(agent, surface) as interrupts:
                result = await _until_done(run_prompt(agent, task))
                if result is not None:
                    result = await _until_done(_with_helpers(agent, result, interrupts.first))
            renderer.close()
        if headless is not None:
            headless.finish(result, denied)
        return _report(agent, result, route, denied)
    finally:
        await ctx.owner.dispose()


def _plan_first(ctx: Context, agent: Agent) -> None:
    plan_mode = ctx.get(PLAN_MODE)
    if plan_mode is None:
        raise CliError("--plan needs the plan_mode plugin (its row is off in this profile)")
    plan_mode.set(agent, True)


async def _with_helpers(
    agent: Agent, result: RunResult, interrupted: CancelSignal
) -> RunResult | None:
    """The run once the subagents the task left working in the background are done: each
    answer reaches the agent as a notice and may wake it for another turn, whose end is
    then the run's. None when Ctrl-C stopped the wait (the helpers go with the runtime)."""
    subagents = agent.ctx.get(SUBAGENTS)
    if interrupted.aborted or subagents is None or not _working(subagents, agent):
        return result
    start = result.events[0].seq if result.events else agent.session.seq
    while working := _working(subagents, agent):
        try:
            await interrupted.race(asyncio.wait(working, return_when=asyncio.FIRST_COMPLETED))
        except Aborted:
            return None
        await agent.when_idle()  # the turn a notice woke, if any
    return RunResult.of_events(agent.session.events[start:], agent.id)


def _working(subagents: SubagentRuntime, agent: Agent) -> list[asyncio.Future[Any]]:
    """The pending results of `agent`'s background subagents that are working."""
    return [child.result for child in subagents.children(agent) if child.active]


def _check_cost_limit(ctx: Context, options: RunOptions, route: Route) -> None:
    """`--max-cost` is a hard stop only with a price for the route: without one, a usage
    error before any model call (not a run that spends unchecked)."""
    from ..plugins.usage import PRICES

    if options.limits is None or options.limits.max_cost is None:
        return
    prices = ctx.get(PRICES)
    if prices is None or prices.price(route.provider, route.model) is None:
        raise CliError(
            f"--max-cost needs a price for {route.provider}/{route.model}, which has none: "
            "add one to the `prices` of the usage row of a profile, or leave --max-cost out"
        )


async def _headless(
    options: RunOptions, ctx: Context, agent: Agent, route: Route, cwd: Path, started: float
) -> Headless | None:
    """The `json` / `stream-json` output of `--output-format`, its `init` line written:
    the tools are those the agent's first request offers (assembled as the loop does)."""
    if options.output_format == "text":
        return None
    headless = Headless(options.output_format, agent, route.model, pricer(ctx), started)
    from ..prompt import SYSTEM_PROMPT, AssembleContext

    offered = await agent.ctx.require(SYSTEM_PROMPT).assemble(AssembleContext(agent, scope=agent))
    tools = [schema.name for schema in offered.tools]
    headless.start(cwd, tools, "bypassPermissions" if options.yes else "default")
    return headless


def _printer(
    agent: Agent, renderer: Renderer, options: RunOptions, headless: Headless | None
) -> Callable[[SessionEventPayload], None]:
    """The `session/event` listener that shows the agent's events (or prints them as JSON)."""

    def on_event(payload: SessionEventPayload) -> None:
        if payload.session is not agent.session:
            return
        if headless is not None:
            headless.event(payload.event)
        elif options.json:
            sys.stdout.write(json.dumps(payload.event.to_json(), ensure_ascii=False) + "\n")
            sys.stdout.flush()
        else:
            renderer.event(payload.event)

    return on_event


def _progress(agent: Agent, renderer: Renderer) -> Callable[[ToolProgress], None]:
    """The `tool/progress` listener that shows the agent's running calls' output live."""

    def on_progress(payload: ToolProgress) -> None:
        if payload.session is agent.session:
            renderer.progress(payload.event)

    return on_progress


async def _until_done(run: Awaitable[RunResult | None]) -> RunResult | None:
    """The run's result, or None when the second Ctrl-C gave up waiting."""
    try:
        return await run
    except asyncio.CancelledError:
        return None


class _Interrupts:
    """Ctrl-C while the task runs: the first cancels the turn, the second the whole run."""

    def __init__(self, agent: Agent, surface: Surface) -> None:
        self.agent = agent
        self.surface = surface
        self.count = 0
        self.first = CancelSignal()
        """Fired by the first Ctrl-C."""
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
            self.first.abort("interrupted")
            self.surface.note("cancelling the turn… (Ctrl-C again to quit)", "yellow")
            self.agent.cancel(USER_CANCEL)
        elif self.main is not None:
            self.main.cancel()


def _unanswered(ctx: Context) -> list[ToolExecution]:
    """The tools whose calls were refused because they needed approval and nothing could
    answer (a `dsh run` without `--yes`), in order, filled as the run goes."""
    import logging

    from ..plugins.approval import no_answerer
    from ..tools import TOOLS_RESULT, ToolFailure, ToolOutcome

    # The run's last line says what was denied and how to allow it: not a warning as well.
    logging.getLogger("dsh.plugins.approval").setLevel(logging.ERROR)
    denied: list[ToolExecution] = []

    def record(outcome: ToolOutcome) -> None:
        result, name = outcome.result, outcome.exec.name
        if name == exit_plan_mode.name:  # an unapproved plan is `--plan`'s answer, no refusal
            return
        if isinstance(result, ToolFailure) and result.error.message == no_answerer(name):
            denied.append(outcome.exec)

    ctx.on(TOOLS_RESULT, record)
    return denied


def _denial_line(denied: list[ToolExecution]) -> str:
    names = [call.name for call in denied]
    counts = {name: names.count(name) for name in dict.fromkeys(names)}
    tools = ", ".join(f"{n} ({c} calls)" if c > 1 else n for n, c in counts.items())
    first = next(iter(counts))
    return (
        f"denied (they need approval): {tools} — to allow: pass --yes, add "
        f"`{{tool: {first}, action: allow}}` to the `policy` of the approval row of a profile "
        "(dsh.yml), or use dsh chat"
    )


def _report(
    agent: Agent, result: RunResult | None, route: Route, denied: list[ToolExecution]
) -> int:
    from rich.console import Console

    err = Console(stderr=True, highlight=False, emoji=False)
    if result is None:
        err.print(f"interrupted · session {agent.id}", style="yellow", markup=False)
        return EXIT_INTERRUPTED
    outcome = describe_end(result.end_reason)
    ok = result.finish_reason == "completed"
    err.print(
        f"session {agent.id} · {outcome}",
        style="green" if ok else "red",
        markup=False,
        soft_wrap=True,
    )
    advice = failure_advice(result.end_reason, route)
    if advice:
        err.print(advice, style="yellow", markup=False, soft_wrap=True)
    if denied:
        err.print(_denial_line(denied), style="yellow", markup=False, soft_wrap=True)
    if ok:
        return EXIT_DENIED if denied else EXIT_OK
    stop = budget_stop(result.end_reason)
    if stop is not None:
        where = f"--{stop.name}" if stop.scope == "run" else f"the usage row's {stop.scope}_limits"
        err.print(
            f"→ nothing is lost: raise {where} and continue with dsh run -c",
            style="yellow",
            markup=False,
            soft_wrap=True,
        )
        return EXIT_BUDGET
    cancelled = result.finish_reason == "aborted"
    return EXIT_INTERRUPTED if cancelled else EXIT_TURN_FAILED


def _markdown(options: RunOptions) -> bool:
    return not options.plain and sys.stdout.isatty()


@contextlib.contextmanager
def _surface(options: RunOptions) -> Iterator[Surface]:
    """A terminal with a live area when stdout is one, else plain pipes."""
    from ._surfaces import PipeSurface, TerminalSurface

    if options.json or options.output_format != "text" or not sys.stdout.isatty():
        yield PipeSurface()
        return
    from rich.console import Console

    with TerminalSurface(Console(highlight=False), markdown=_markdown(options)) as surface:
        yield surface
