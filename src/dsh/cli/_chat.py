"""`dsh chat`: an interactive session — follow-ups when idle, steering while a turn runs,
approvals answered at the prompt."""

from __future__ import annotations

import asyncio
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .._context import Context
from ..agent import USER_CANCEL, Agent, AgentHandle, current_model
from ..assembly import Route, start, workspace_dir
from ..events import TurnEndEvent, TurnStartEvent, UserMessageEvent, typed_as
from ..kernel import Aborted, Disposer
from ..llm import clean_text
from ..plugins.approval import APPROVAL, Approval, ApprovalRequest
from ..plugins.ask_user import QUESTIONS, QuestionRequest
from ..plugins.ask_user import Answer as AskUserAnswer
from ..plugins.compaction import COMPACTION, CompactionError
from ..plugins.hooks import HOOKS
from ..plugins.mcp import MCP
from ..plugins.plan_mode import PLAN_MODE
from ..session import SESSION_EVENT, SessionEventPayload
from ..tools import TOOL_PROGRESS_EVENT, Decision, ToolProgress
from ..workspace import Trust
from ._approve import REASK, REASON_PROMPT, Answer, approval_view, parse_answer, question
from ._mcp import McpSuggestions, prompt_problem
from ._model import resume_switch, switch_effort, switch_to
from ._questions import Asked
from ._render import Renderer
from ._rewind_chat import Line, rewind_dialog
from ._runtime import CliError, Options, failure_advice, prepare, pricer, session_cost
from ._screen import ChatScreen, history_file
from ._sessions import open_agent, persistence_of, summaries, summary_line

COMMANDS = {
    "/help": "what the keys and commands do",
    "/new": "start a new session",
    "/resume": "resume a session: /resume ID (a unique prefix is enough)",
    "/sessions": "this workspace's sessions, newest first",
    "/compact": "summarise older turns to free the context",
    "/rewind": "take the files, the conversation or both back to a prompt (/rewind undo)",
    "/hooks": "this session's hooks: where each comes from, whether it runs",
    "/plan": "plan first: only reading tools run until you approve a plan (/plan off leaves)",
    "/mcp": "MCP servers: their state and tools (/mcp login NAME: log in to one)",
    "/sandbox": "what commands may read, write and reach in this session",
    "/model": "the session's model; /model provider:model switches from the next request",
    "/reasoning": "show the model's reasoning in full or folded (toggles); /reasoning low|high|"
    "default sets the effort",
    "/exit": "quit",
}
HELP = (
    "Enter sends: a follow-up when idle, steering while a turn runs. Ctrl-C cancels the running "
    "turn; Ctrl-C twice at an idle prompt (or Ctrl-D) quits. Up/down: earlier inputs."
)
RESUME_TURNS = 3
"""How many of a resumed session's last turns are printed again."""


async def chat(options: Options) -> int:
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise CliError("dsh chat needs a terminal; for scripts and pipes use `dsh run`")
    if options.resume is None and not options.latest:
        # Before the profile is read (./dsh.yml) and the runtime starts (MCP servers).
        await ask_trust(workspace_dir(options.cwd))
    assembly, route = prepare(options)
    ctx = await start(assembly)
    session = Chat(ctx, route, assembly.workspace, options)
    try:
        await session.open(options.resume, options.latest)
        return await session.run()
    finally:
        await session.close()
        await ctx.owner.dispose()


class Chat:
    """One chat: the screen, the current agent, and a pending approval question."""

    def __init__(self, ctx: Context, route: Route, cwd: Path, options: Options) -> None:
        self.ctx = ctx
        self.route = route
        self.cwd = cwd
        self.yes = options.yes
        self.model_flag = options.model
        """`-m`: a resumed session switches to it (a new one starts on it)."""
        self.screen = ChatScreen(
            markdown=not options.plain,
            history=history_file(cwd),
            commands=COMMANDS,
            prompt=self._prompt,
            idle_hint=self._idle_hint,
            suggestions=McpSuggestions(lambda: ctx.get(MCP), lambda: self.agent),
        )
        self.renderer = Renderer(
            self.screen,
            markdown=not options.plain,
            echo_prompts=True,
            cost=pricer(ctx),
            session_cost=session_cost(ctx, lambda: self.agent),
        )
        self.handle: AgentHandle | None = None
        self.question: Question | Asked | Line | None = None
        """What the prompt is answering: an approval, or the model's questions."""
        self.queued: dict[str, str] = {}
        """Steering not yet in the log, by message id."""
        self._listener: Callable[[], None] | None = None
        self._answerer: Disposer | None = None
        self._asker: Disposer | None = None
        self._idle_interrupts = 0
        self._compacting = False

    def _idle_hint(self) -> str:
        agent = self.agent
        current = current_model(agent) if agent is not None else None
        chosen = current or self.route
        provider, model = chosen.provider, chosen.model
        return f"{provider}/{model} · /help · Ctrl-C cancels · Ctrl-D quits"

    @property
    def agent(self) -> Agent | None:
        return self.handle.agent if self.handle is not None else None

    # -- the loop ------------------------------------------------------------------------------

    async def run(self) -> int:
        from prompt_toolkit.patch_stdout import patch_stdout

        if not self.yes:
            self._install_answerer()
        questions = self.ctx.get(QUESTIONS)
        if questions is not None:  # a person is here, --yes or not
            self._asker = questions.set_answerer(self._ask)
        note = " · --yes: every tool call is approved" if self.yes else ""
        self.screen.note(f"dsh chat · {self.route.provider}/{self.route.model}{note}", "dim")
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGINT, self._ctrl_c)  # a Ctrl-C no prompt read
        try:
            with patch_stdout(raw=True):
                while True:
                    try:
                        text = await self.screen.read()
                    except KeyboardInterrupt:
                        self._ctrl_c()
                        continue
                    except EOFError:
                        return 0
                    self._idle_interrupts = 0
                    if not await self._handle(text):
                        return 0
        finally:
            loop.remove_signal_handler(signal.SIGINT)
            await self.screen.drain()

    def _ctrl_c(self) -> None:
        """Ctrl-C (a key at the prompt, or SIGINT between two prompts): cancel the running
        turn (and a question it asks) or /compact; at an idle prompt, the second one quits."""
        agent = self.agent
        if agent is not None and self._compacting:
            agent.cancel(USER_CANCEL, keep_inbox=True)  # the maintenance task's signal
            self.screen.status("cancelling the compaction…")
            return
        if agent is not None and agent.status == "running":
            agent.cancel(USER_CANCEL)
            self.screen.status("cancelling the turn…")
            self._idle_interrupts = 0
            return
        self._idle_interrupts += 1
        if self._idle_interrupts >= 2:
            self.screen.stop()
        else:
            self.screen.note("(Ctrl-C again to exit)", "dim")

    def _prompt(self) -> str:
        if self.question is not None:
            return self.question.prompt
        agent = self.agent
        if agent is not None and agent.status == "running":
            return "steer » "
        plan_mode = self.ctx.get(PLAN_MODE)
        planning = agent is not None and plan_mode is not None and plan_mode.active(agent.session)
        return "plan > " if planning else "> "

    async def _handle(self, text: str) -> bool:
        """Act on one input line; False to quit."""
        if self.question is not None:
            self.question.answer(text, self.screen)
            return True
        text = clean_text(text.strip())  # a terminal's undecodable byte arrives as a surrogate
        if not text:
            return True
        if text.startswith("/") and not text.startswith("/mcp__"):
            return await self._command(text)
        agent = self.agent
        if agent is None:
            return True
        if text.startswith("/mcp__"):  # a server's prompt: sent once it can run
            problem = prompt_problem(self.ctx.get(MCP), agent, text)
            if problem is not None:
                self.screen.note(problem, "red")
                return True
        if agent.status == "running":
            self.queued[agent.steer(text)] = text
            self.screen.queued = list(self.queued.values())
        else:
            self.screen.status("thinking…")
            agent.followup(text)
        return True

    async def _command(self, text: str) -> bool:
        command, _, argument = text.partition(" ")
        argument = argument.strip()
        if command in ("/exit", "/quit"):
            return False
        if command == "/help":
            self.screen.note(HELP)
            for name, meaning in COMMANDS.items():
                self.screen.note(f"  {name:<11} {meaning}")
        elif command == "/new":
            await self._switch(None)
        elif command == "/resume":
            if argument:
                await self._switch(argument)
            else:
                await self._list_sessions("usage: /resume ID — sessions of this workspace:")
        elif command == "/sessions":
            await self._list_sessions("sessions of this workspace, newest first:")
        elif command == "/compact":
            await self._compact()
        elif command == "/rewind":
            self._rewind(argument)
        elif command == "/hooks":
            self._show_hooks()
        elif command == "/plan":
            self._plan(argument)
        elif command == "/mcp":
            await self._mcp(argument)
        elif command == "/sandbox":
            await self._show_sandbox()
        elif command == "/model" and self.agent is not None:
            self.screen.note(*switch_to(self.agent, argument))
        elif command == "/reasoning" and argument and self.agent is not None:
            self.screen.note(*switch_effort(self.agent, argument))
        elif command == "/reasoning":
            self.renderer.reasoning = not self.renderer.reasoning
            shown = "in full" if self.renderer.reasoning else "folded to one line"
            self.screen.note(f"reasoning is now shown {shown}", "dim")
        else:
            self.screen.note(f"unknown command {command} (/help lists them)", "red")
        return True

    # -- sessions ------------------------------------------------------------------------------

    async def open(self, resume: str | None, latest: bool) -> None:
        """The first session: new, resumed (`resume`), or the workspace's latest."""
        handle = await open_agent(
            self.ctx,
            self.route,
            self.cwd,
            resume=resume,
            latest=latest,
            stored_from_first_turn=True,
        )
        resumed = resume is not None or latest
        await self._attach(handle, resumed=resumed)
        switched = (
            resume_switch(handle.agent, self.model_flag) if resumed and self.model_flag else None
        )
        if switched is not None:
            self.screen.note(*switched)

    async def _switch(self, resume: str | None) -> None:
        """Leave the current session for a new or a resumed one."""
        try:
            handle = await open_agent(
                self.ctx, self.route, self.cwd, resume=resume, stored_from_first_turn=True
            )
        except (CliError, RuntimeError) as exc:
            self.screen.note(str(exc), "red")
            return
        await self._attach(handle, resumed=resume is not None)

    async def _attach(self, handle: AgentHandle, *, resumed: bool) -> None:
        if self._listener is not None:
            self._listener()
        if self.handle is not None:
            await self.handle.dispose()
        self.handle = handle
        self.queued.clear()
        self.screen.queued = []
        agent = handle.agent
        self.cwd = Path(agent.session.header.cwd or self.cwd)  # a resumed session's project
        if resumed:
            self.screen.note(f"resumed session {agent.id}", "dim")
            self.renderer.replay(_last_turns(list(agent.session.events), RESUME_TURNS))
        else:
            self.screen.note(f"new session {agent.id}", "dim")
        on_event = self.ctx.on(SESSION_EVENT, self._on_event)
        on_progress = self.ctx.on(TOOL_PROGRESS_EVENT, self._on_progress)

        def stop() -> None:
            on_event()
            on_progress()

        self._listener = stop

    def _on_progress(self, payload: ToolProgress) -> None:
        agent = self.agent
        if agent is not None and payload.session is agent.session:
            self.renderer.progress(payload.event)

    def _on_event(self, payload: SessionEventPayload) -> None:
        agent = self.agent
        if agent is None or payload.session is not agent.session:
            return
        event = payload.event
        prompt = typed_as(event, UserMessageEvent)
        if prompt is not None and self.queued.pop(prompt.message.id, None) is not None:
            self.screen.queued = list(self.queued.values())
        self.renderer.event(event)
        end = typed_as(event, TurnEndEvent)
        if end is not None:
            if self.queued and agent.status != "running":
                self.queued.clear()
                self.screen.queued = []
            advice = failure_advice(end.reason, self.route)
            if advice:
                self.screen.note(advice, "yellow")

    async def _list_sessions(self, title: str) -> None:
        try:
            found = await summaries(persistence_of(self.ctx), cwd=self.cwd, limit=20)
        except CliError as exc:
            self.screen.note(str(exc), "red")
            return
        self.screen.note(title, "dim")
        for summary in found:
            self.screen.note("  " + summary_line(summary))

    def _show_hooks(self) -> None:
        from ._hooks import hook_lines

        service = self.ctx.get(HOOKS)
        hooks = service.hooks_of(self.agent) if service is not None and self.agent else None
        if hooks is None:
            self.screen.note("hooks are not enabled (no hooks plugin in the profile)", "red")
            return
        for line in hook_lines(hooks):
            self.screen.note(line)

    async def _mcp(self, argument: str) -> None:
        from ._mcp import chat_mcp

        await chat_mcp(self.ctx.get(MCP), argument, self.screen.note)

    async def _show_sandbox(self) -> None:
        from ..plugins.sandbox import SANDBOX, report

        sandbox = self.ctx.get(SANDBOX)
        if sandbox is None:
            self.screen.note("no sandbox in the profile: commands run unconfined", "yellow")
            return
        agent = self.agent
        mode = sandbox.mode_of(agent.session if agent is not None else None)
        for topic, allowed in await report(sandbox, mode, str(self.cwd)):
            self.screen.note(f"{topic + ':':<13} {allowed}")

    async def _compact(self) -> None:
        service = self.ctx.get(COMPACTION)
        agent = self.agent
        if service is None or agent is None:
            self.screen.note("compaction is not available", "red")
            return
        if agent.status != "idle":
            self.screen.note("wait for the turn to end before compacting", "red")
            return
        plan = service.manual_plan(agent)
        if not plan.worth_it:
            self.screen.note(plan.why_not(), "dim")
            return
        self.screen.status("compacting…  (Ctrl-C cancels)")
        self._compacting = True
        try:
            result = await service.compact_now(agent)
        except Aborted:
            self.screen.note("compaction cancelled: the conversation is unchanged", "dim")
            return
        except CompactionError as exc:
            self.screen.note(f"compaction failed: {exc}", "red")
            return
        finally:
            self._compacting = False
            self.screen.status(None)
        if result is None:
            self.screen.note(service.manual_plan(agent).why_not(), "dim")

    def _rewind(self, argument: str) -> None:
        """The `/rewind` dialog, in a task of its own: it reads its answers at the prompt."""
        from ..plugins.rewind import REWIND

        rewinds = self.ctx.get(REWIND)
        agent = self.agent
        if rewinds is None or agent is None:
            self.screen.note("rewind is not available (no rewind plugin in the profile)", "red")
            return
        if agent.status != "idle":
            self.screen.note("wait for the turn to end (or Ctrl-C it) before rewinding", "red")
            return
        dialog = rewind_dialog(rewinds, agent.session, argument, self._line, self.screen)
        self.ctx.owner.spawn(dialog, name="dsh-chat-rewind")

    async def _line(self, prompt: str) -> str:
        """One line typed at the prompt, for a dialog."""
        line = self.question = Line(prompt)
        self.screen.live("")
        try:
            return await line.future
        finally:
            self.question = None

    def _plan(self, argument: str) -> None:
        plan_mode = self.ctx.get(PLAN_MODE)
        agent = self.agent
        if plan_mode is None or agent is None:
            self.screen.note(
                "plan mode is not available (no plan_mode plugin in the profile)", "red"
            )
            return
        if argument not in ("", "on", "off"):
            self.screen.note("usage: /plan (on) or /plan off", "red")
            return
        active = argument != "off"
        if not plan_mode.set(agent, active):
            self.screen.note(f"plan mode is already {'on' if active else 'off'}", "dim")
        elif active:
            self.screen.note("the agent plans first: it reads, then asks you to approve", "dim")

    # -- approvals -----------------------------------------------------------------------------

    async def _ask(self, request: QuestionRequest) -> list[AskUserAnswer]:
        """The model's questions, answered at the prompt (Ctrl-C cancels the turn)."""
        self.screen.status(None)
        future: asyncio.Future[list[AskUserAnswer]] = asyncio.get_running_loop().create_future()
        self.question = Asked(request.questions, future, self.screen)
        self.screen.live("")
        try:
            return await future
        finally:
            self.question = None

    def _install_answerer(self) -> None:
        approval = self.ctx.get(APPROVAL)
        if approval is None:
            return

        async def answer(request: ApprovalRequest) -> Decision:
            self.screen.status(None)
            if request.tool == "exit_plan_mode":  # r: no, with feedback the model reads
                self.screen.note("? the agent's plan: approve it to leave plan mode", "bold yellow")
            else:
                self.screen.note(f"? {request.tool} needs your approval", "bold yellow")
            for line, style in approval_view(request.tool, request.arguments, self.cwd):
                self.screen.note(line, style)
            trusted = Trust().is_trusted(self.cwd)
            self.question = Question(asyncio.get_running_loop().create_future(), trusted)
            self.screen.live("")
            try:
                given = await self.question.future
            finally:
                self.question = None
            if given.choice == "project":
                self._allow_in_project(approval, request, trusted)
            return given.decision()

        self._answerer = approval.set_answerer(answer)

    def _allow_in_project(
        self, approval: Approval, request: ApprovalRequest, trusted: bool
    ) -> None:
        """Save the project rule; answering "always in this project" in a workspace not yet
        trusted trusts it (the question said so), or the rule would never apply."""
        if not trusted:
            Trust().trust(self.cwd)
        rule, path = approval.allow_in_project(self.cwd, request.tool, request.arguments)
        also = "; this workspace is now trusted" if not trusted else ""
        self.screen.note(f"  saved: allow {rule} in {path}{also}", "dim")

    async def close(self) -> None:
        for registration in (self._answerer, self._asker):
            if registration is not None:
                registration()
        if self._listener is not None:
            self._listener()
        self.renderer.close()
        await self.screen.close()
        if self.handle is not None:
            await self.handle.dispose()


class Question:
    """An approval waiting for the person: answers are parsed, anything else asks again."""

    def __init__(self, future: asyncio.Future[Answer], trusted: bool) -> None:
        self.future = future
        self.trusted = trusted
        self.wants_reason = False

    @property
    def prompt(self) -> str:
        return REASON_PROMPT if self.wants_reason else question(trusted=self.trusted)

    def answer(self, text: str, screen: ChatScreen) -> None:
        if self.future.done():
            return
        if self.wants_reason:
            self.future.set_result(Answer("deny", text.strip() or None))
            return
        given = parse_answer(text)
        if given is None:
            screen.note(f"{text.strip()!r}: {REASK}", "yellow")
        elif given.choice == "reason":
            self.wants_reason = True
        else:
            self.future.set_result(given)


async def ask_trust(workspace: Path) -> None:
    """Ask once whether to trust a workspace whose files would run something; remember yes."""
    from prompt_toolkit import PromptSession

    from ..assembly import untrusted_local_profile
    from ._trust import TRUST_QUESTION, trust_note, untrusted_files

    local = untrusted_local_profile()
    files = untrusted_files(workspace) + ([local] if local is not None else [])
    if not files:
        return
    print(trust_note(workspace, files))
    try:
        answer = await PromptSession[str]().prompt_async(TRUST_QUESTION)
    except (KeyboardInterrupt, EOFError):
        answer = ""
    if answer.strip().lower() in ("y", "yes"):
        trust = Trust()
        for folder in [workspace, *([local.parent] if local is not None else [])]:
            if not trust.is_trusted(folder):
                trust.trust(folder)
                print(f"trusted {folder}")
    else:
        print("not trusted: its hooks and MCP servers stay off")


def _last_turns(events: list[Any], count: int) -> list[Any]:
    """The events of the last `count` turns (a resumed session's recent past)."""
    starts = [i for i, e in enumerate(events) if e.type == TurnStartEvent.type]
    return events[starts[-count] :] if len(starts) >= count else events
