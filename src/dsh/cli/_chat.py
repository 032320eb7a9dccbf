"""`dsh chat`: an interactive session — follow-ups when idle, steering while a turn runs."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..agent import USER_CANCEL, AgentHandle
from ..kernel import Context
from ..llm import clean_text
from ..session import SESSION_EVENT, SessionEventPayload
from ._render import TerminalRenderer, call_summary, describe_end
from ._runtime import (
    Route,
    build_profile,
    check_credentials,
    create_agent,
    resolve_route,
    resume_agent,
    start_runtime,
)

if TYPE_CHECKING:
    from rich.console import Console

HELP = (
    "Enter sends (a follow-up when idle, steering while a turn runs). Ctrl-C cancels the "
    "running turn; Ctrl-C at an idle prompt twice exits.\n"
    "/new  a new session   /resume ID  resume a session   /sessions  list sessions\n"
    "/compact  compact this session now   /hooks  this session's hooks   /exit  quit"
)
ANSWERS = {"y": "once", "yes": "once", "a": "always", "always": "always", "n": "deny", "no": "deny"}


@dataclass
class ChatState:
    ctx: Context
    route: Route
    cwd: Path
    console: Console
    handle: AgentHandle | None = None
    question: asyncio.Future[str] | None = None
    listeners: list[Any] = field(default_factory=list)
    """The current session's listeners (replaced by /new and /resume)."""
    answerer: Any = None
    """The approval answerer: one for the whole chat."""


async def chat(
    profile: list[Path] | None,
    provider: str | None,
    model: str | None,
    cwd: Path | None,
    *,
    resume: str | None = None,
    sandbox: str | None = None,
) -> int:
    from prompt_toolkit import PromptSession
    from prompt_toolkit.patch_stdout import patch_stdout
    from rich.console import Console

    built = build_profile(profile, sandbox=sandbox)
    route = resolve_route(built, provider, model)
    check_credentials(route)
    console = Console(highlight=False, force_terminal=True)
    session: PromptSession[str] = PromptSession()
    workspace = (cwd or Path.cwd()).resolve()
    if resume is None:
        await _ask_trust(session, console, workspace)  # before boot: MCP servers start there
    ctx = await start_runtime(built, route)
    state = ChatState(ctx, route, workspace, console)
    renderer = TerminalRenderer(console, console)
    try:
        await _switch(state, renderer, resume)
        if state.handle is None:
            return 2
        _install_answerer(state)
        console.print(
            f"dsh chat · {route.provider}/{route.model} · /help for commands",
            style="dim",
            markup=False,
        )
        idle_interrupts = 0
        with patch_stdout(raw=True):
            while True:
                try:
                    text = await session.prompt_async(lambda: _prompt(state))
                except KeyboardInterrupt:
                    agent = state.handle.agent if state.handle else None
                    if agent is not None and agent.status == "running":
                        agent.cancel(USER_CANCEL)
                        console.print("cancelling the turn…", style="yellow")
                        idle_interrupts = 0
                        continue
                    idle_interrupts += 1
                    if idle_interrupts >= 2:
                        return 0
                    console.print("(Ctrl-C again to exit)", style="dim")
                    continue
                except EOFError:
                    return 0
                idle_interrupts = 0
                if not await _handle(state, renderer, clean_text(text.strip())):
                    return 0
    finally:
        renderer.close()
        if state.handle is not None:
            await state.handle.dispose()
        await ctx.owner.dispose()


def _prompt(state: ChatState) -> str:
    if state.question is not None and not state.question.done():
        return "allow? [y]es once / [a]lways / [n]o > "
    agent = state.handle.agent if state.handle else None
    return "steer > " if agent is not None and agent.status == "running" else "> "


async def _handle(state: ChatState, renderer: TerminalRenderer, text: str) -> bool:
    """Act on one input line; False to quit."""
    if state.question is not None and not state.question.done():
        state.question.set_result(ANSWERS.get(text.lower(), "deny"))
        return True
    if not text:
        return True
    console = state.console
    if text.startswith("/"):
        command, _, argument = text.partition(" ")
        if command in ("/exit", "/quit"):
            return False
        if command == "/help":
            console.print(HELP, markup=False)
        elif command == "/new":
            await _switch(state, renderer, None)
        elif command == "/resume":
            if not argument.strip():
                console.print("usage: /resume SESSION_ID", style="red")
            else:
                await _switch(state, renderer, argument.strip())
        elif command == "/sessions":
            await _list_sessions(state)
        elif command == "/compact":
            await _compact(state)
        elif command == "/hooks":
            _show_hooks(state)
        else:
            console.print(f"unknown command {command} (/help lists them)", style="red")
        return True
    agent = state.handle.agent if state.handle else None
    if agent is None:
        return True
    if agent.status == "running":
        agent.steer(text)
    else:
        renderer.waiting()
        agent.followup(text)
    return True


async def _switch(state: ChatState, renderer: TerminalRenderer, session_id: str | None) -> None:
    """Leave the current session (if any) and open a new or resumed one."""
    from ._runtime import CliError

    try:
        if session_id is None:
            handle = await create_agent(state.ctx, state.route, state.cwd)
        else:
            handle = await resume_agent(state.ctx, state.route, session_id)
    except (CliError, RuntimeError) as exc:
        state.console.print(str(exc), style="red", markup=False)
        return
    for listener in state.listeners:
        listener()
    state.listeners.clear()
    if state.handle is not None:
        await state.handle.dispose()
    state.handle = handle
    agent = handle.agent

    def on_event(payload: SessionEventPayload) -> None:
        if payload.session is agent.session:
            renderer.event(payload.event)
            if payload.event.type == "turn/end":
                reason = payload.event.data["reason"]
                if reason.get("kind") != "completed":
                    state.console.print(describe_end(reason), style="red", markup=False)

    state.listeners.append(state.ctx.on(SESSION_EVENT, on_event))
    verb = "resumed" if session_id else "new"
    state.console.print(f"{verb} session {agent.id}", style="dim", markup=False)


def _install_answerer(state: ChatState) -> None:
    approval = state.ctx.get("approval")
    if approval is None:
        return

    async def answer(request: Any) -> str:
        loop = asyncio.get_running_loop()
        state.question = loop.create_future()
        summary = call_summary(request.tool, _raw(request.arguments))
        state.console.print(
            f"? {summary} needs approval ({request.reason or 'policy'})",
            style="bold yellow",
            markup=False,
        )
        try:
            return await state.question
        finally:
            state.question = None

    state.answerer = approval.set_answerer(answer)


def _raw(arguments: Any) -> str:
    import json

    return arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)


async def _ask_trust(session: Any, console: Console, workspace: Path) -> None:
    """Ask once whether to trust a workspace whose files would run something; remember yes."""
    from ..workspace import Trust
    from ._hooks import TRUST_QUESTION, trust_note, untrusted_files

    files = untrusted_files(workspace)
    if not files:
        return
    console.print(trust_note(workspace, files), style="yellow", markup=False)
    try:
        answer = await session.prompt_async(TRUST_QUESTION)
    except (KeyboardInterrupt, EOFError):
        answer = ""
    if answer.strip().lower() in ("y", "yes"):
        Trust().trust(workspace)
        console.print(f"trusted {workspace}", style="dim", markup=False)
    else:
        console.print("not trusted: its hooks and MCP servers stay off", style="dim")


def _show_hooks(state: ChatState) -> None:
    from ._hooks import hook_lines

    service = state.ctx.get("hooks")
    hooks = service.hooks_of(state.handle.agent) if service and state.handle else None
    if hooks is None:
        state.console.print("hooks are not enabled (no hooks plugin in the profile)", style="red")
        return
    for line in hook_lines(hooks):
        state.console.print(line, markup=False, highlight=False)


async def _list_sessions(state: ChatState) -> None:
    persistence = state.ctx.get("session_persistence")
    if persistence is None:
        state.console.print("no session persistence is configured", style="red")
        return
    for header in await persistence.list():
        state.console.print(f"{header.id}  {header.cwd or ''}", markup=False)


async def _compact(state: ChatState) -> None:
    service = state.ctx.get("compaction")
    agent = state.handle.agent if state.handle else None
    if service is None or agent is None:
        state.console.print("compaction is not available", style="red")
        return
    if agent.status != "idle":
        state.console.print("wait for the turn to end before compacting", style="red")
        return
    try:
        result = await service.compact_now(agent)
    except Exception as exc:
        state.console.print(f"compaction failed: {exc}", style="red", markup=False)
        return
    state.console.print("nothing to compact" if result is None else "compacted", style="dim")
