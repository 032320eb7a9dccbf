"""The replay itself: today's runtime on a recorded session, its model the recording's answers
served by the loopback server of `dsh.testing`, its tools the recorded results or a rerun in
a copy of the workspace."""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Literal

from .._context import Context
from ..agent import Agent, AgentHandle, AgentOptions, CreateAgentOptions
from ..assembly import RuntimeSpec, assemble, start
from ..event_types import TOOL_CALL
from ..kernel import Next
from ..llm import LLM_STREAM, Json, Message, blocks_from_json, expect
from ..llm.adapters import ModelRoute, parse_model
from ..plugins.ask_user import QUESTIONS, QuestionRequest
from ..plugins.plan_mode import PLAN_MODE
from ..profiles import load_profile
from ..session import SessionEvent, SessionMeta
from ..testing import OpenAIServer, RecordedRequest, Reply, reply
from ..tools import (
    TOOLS_EXECUTE,
    ToolErrorInfo,
    ToolExecution,
    ToolFailure,
    ToolResult,
    ToolSuccess,
    failure,
)
from ._effects import call_effects, redo_effect
from ._recording import Recording, ReplayError
from ._rewinds import redo
from ._side import side_calls
from ._views import tool_views

__all__ = ["REPLAY_KEY_ENV", "Played", "ToolsMode", "model_string", "play"]

ToolsMode = Literal["recorded", "rerun"]

REPLAY_KEY_ENV = "DSH_REPLAY_API_KEY"
"""The key the replay's route sends to its own loopback server (never a real key)."""

SUBAGENT_TOOLS = frozenset({"subagent", "subagent_fork"})
"""Tools whose recorded results a rerun serves too: a subagent's model calls would need its
own session's answers (the subagents plugin's default tool names)."""

END_OF_RECORDING = "[replay: the recording has no answer for this request]"
"""What a request past the recorded answers is told (a plain answer: the turn ends)."""


class Played:
    """What a replay produced: its log, and the folder it ran in (to read paths back)."""

    def __init__(
        self, events: Sequence[SessionEvent], workspace: str, notes: Sequence[str] = ()
    ) -> None:
        self.events = events
        self.workspace = workspace
        self.notes = tuple(notes)
        """What of the recording the replay could not do again (a rewind's part)."""


async def play(
    recording: Recording,
    *,
    tools: ToolsMode = "recorded",
    profiles: Sequence[str | os.PathLike[str]] = (),
    workspace: str | os.PathLike[str] | None = None,
) -> Played:
    """Run today's runtime on the recording's prompts, its model answering with the recorded
    answers in order; `rerun` runs the tools in a scratch copy of `workspace` (default: the
    session's folder as it is now)."""
    with tempfile.TemporaryDirectory(prefix="dsh-replay-") as scratch:
        folder = await asyncio.to_thread(_workspace, recording, tools, workspace, Path(scratch))
        answers = _Answers(recording)
        async with OpenAIServer([answers.next] * answers.capacity()) as server:
            store = Path(scratch) / "sessions"
            ctx, route = await _runtime(recording, folder, store, server, profiles)
            try:
                questions = ctx.get(QUESTIONS)
                if recording.asks and questions is not None:
                    questions.set_answerer(_decline)  # the person cannot be asked again
                ctx.on(LLM_STREAM, side_calls(recording.events))
                only = None if tools == "recorded" else SUBAGENT_TOOLS
                ctx.on(TOOLS_EXECUTE, _recorded_results(recording.events, only))
                between = _Between(ctx, recording, code=tools == "rerun")
                events = await _drive(ctx, answers, folder, recording.header.id, route, between)
            finally:
                await ctx.owner.dispose()
        return Played(events, folder, between.notes)


async def _decline(request: QuestionRequest) -> None:
    """A replay's answer to the model's questions: declined (with recorded tool results
    the recorded answers are what the model reads)."""
    return None


class _Answers:
    """The recorded answers, one per request; past them, `END_OF_RECORDING`. A prompt that
    steered a running turn is steered again when the answer of the step before it is served
    (it then joins the next step, as it did)."""

    def __init__(self, recording: Recording) -> None:
        self.answers = list(recording.answers)
        self.served = 0
        self.steer: Callable[[Message], object] | None = None
        self.steers: dict[int, list[Message]] = {}
        self.upfront: dict[int, list[Message]] = {}
        for prompt in recording.prompts:
            before = [
                i
                for i, (turn, step) in enumerate(recording.answer_steps)
                if turn == prompt.turn and step < prompt.step
            ]
            if before:
                self.steers.setdefault(before[-1], []).append(prompt.message)
            else:
                self.upfront.setdefault(prompt.turn, []).append(prompt.message)

    def capacity(self) -> int:
        # Each turn may ask once past the recording before its plain answer ends it.
        return len(self.answers) + len(self.upfront) + 1

    def next(self, _request: RecordedRequest) -> Reply:
        if self.served >= len(self.answers):
            return reply(END_OF_RECORDING)
        self.served += 1
        for message in self.steers.get(self.served - 1, ()):
            if self.steer is not None:
                self.steer(message)
        return self.answers[self.served - 1]


def _workspace(
    recording: Recording, tools: ToolsMode, given: str | os.PathLike[str] | None, scratch: Path
) -> str:
    source = Path(given) if given is not None else Path(recording.header.cwd or "")
    if tools == "rerun":
        if not source.is_dir() and given is not None:
            raise ReplayError(f"--workspace {source} is not a folder: --tools rerun copies it")
        if not source.is_dir():
            raise ReplayError(
                f"the session's workspace {str(source)!r} is not a folder: --tools rerun copies "
                "it (name another with --workspace DIR)"
            )
        copy = scratch / "workspace"
        shutil.copytree(source, copy, symlinks=True)
        return str(copy)
    if given is not None or (recording.header.cwd and source.is_dir()):
        return str(source.resolve())
    empty = scratch / "workspace"  # tools do not run: an empty stand-in for a folder gone
    empty.mkdir()
    return str(empty)


_PREFIXES = {"deepseek-official": "deepseek", "openai": "openai"}
"""The model-string prefix of each provider a replay serves as recorded (others: DeepSeek's)."""


def model_string(recording: Recording) -> str:
    """The route of the replay: the recorded provider when it is DeepSeek's or an
    OpenAI-compatible one (else DeepSeek's), with the recorded model."""
    prefix = _PREFIXES.get(recording.provider or "", "deepseek")
    return f"{prefix}:{recording.model or 'deepseek-v4-flash'}"


async def _runtime(
    recording: Recording,
    workspace: str,
    store: Path,
    server: OpenAIServer,
    profiles: Sequence[str | os.PathLike[str]],
) -> tuple[Context, ModelRoute]:
    model = model_string(recording)
    route = parse_model(model, base_url=server.base_url)
    # DeepSeek's route needs a key: its own variable, so no real key is read or sent. Set
    # each time: once read, dsh holds it and leaves a marker that a child cannot use.
    os.environ[REPLAY_KEY_ENV] = "sk-replay-offline"
    spec = RuntimeSpec(
        workspace=workspace,
        base=load_profile().with_config("deepseek", api_key_env=REPLAY_KEY_ENV),
        files=tuple(str(p) for p in profiles),
        auto_approve=True,
        sandbox=recording.sandbox,
        store=str(store),
        model=model,
        base_url=server.base_url,
        require_key=False,
    )
    return await start(assemble(spec)), route


class _Between:
    """What the user did between turns — rewinds, plan mode set — done again before the
    turn that followed each."""

    def __init__(self, ctx: Context, recording: Recording, *, code: bool) -> None:
        self.ctx = ctx
        self.pending = list(recording.rewinds)
        self.modes = list(recording.plan_modes)
        self.code = code
        self.notes: list[str] = []

    async def before(self, agent: Agent, turn: int | None) -> None:
        """Do what was recorded before turn `turn` (None: all that is left)."""
        plan = self.ctx.get(PLAN_MODE)
        while self.modes and (turn is None or self.modes[0][0] < turn):
            active = self.modes.pop(0)[1]
            if plan is not None:
                plan.set(agent, active)
            else:
                self.notes.append(f"plan mode {'on' if active else 'off'} (no plan_mode plugin)")
        while self.pending and (turn is None or self.pending[0].after_turn < turn):
            note = await redo(self.ctx, agent.session, self.pending.pop(0), code=self.code)
            if note is not None:
                self.notes.append(note)


async def _drive(
    ctx: Context,
    answers: _Answers,
    workspace: str,
    session_id: str,
    route: ModelRoute,
    between: _Between,
) -> Sequence[SessionEvent]:
    options = AgentOptions(provider=route.provider, model=route.model)
    meta = SessionMeta(cwd=workspace)
    create = CreateAgentOptions(session_id, meta, None, options)
    handle: AgentHandle = await ctx.agents.create(create)
    agent = handle.agent
    answers.steer = agent.steer
    try:
        for turn in sorted(answers.upfront):
            await between.before(agent, turn)
            prompts = answers.upfront[turn]
            for index, message in enumerate(prompts):
                agent.send(message, "next-turn", wakeup=index == len(prompts) - 1)
            await agent.when_idle()
        await between.before(agent, None)
        return tuple(agent.session.events)
    finally:
        answers.steer = None
        await handle.dispose()


_Serve = Callable[[ToolExecution, Next[ToolExecution, ToolResult]], Awaitable[ToolResult]]


NOT_RECORDED = failure(
    "the recording has no result for this call, and the replay runs no tool with --tools recorded",
    "ReplayError",
    "NOT_RECORDED",
)


def _recorded_results(events: Sequence[SessionEvent], only: frozenset[str] | None) -> _Serve:
    """A `tools/execute` wrapper answering each call the recording has at the same place
    (turn, step, call id; of the tools `only` names, if given) with the recorded result;
    the body does not run."""
    recorded = {
        view.place: view.result
        for view in tool_views(events)
        if view.result is not None and (only is None or view.name in only)
    }
    effects = call_effects(events)

    async def serve(exec: ToolExecution, next: Next[ToolExecution, ToolResult]) -> ToolResult:
        place = _place(exec)
        result = recorded.get(place)
        if isinstance(result, Mapping):
            for effect in effects.get(place, ()):
                redo_effect(exec.agent, effect)  # what the call did besides its result
            return _tool_result(result)
        if only is None:  # recorded results only: nothing runs in the session's own folder
            return NOT_RECORDED
        return await next()

    return serve


def _place(exec: ToolExecution) -> tuple[int, int, str]:
    """Where `exec` stands in its session: the turn and step of its (latest) `tool/call`."""
    session = exec.session
    for event in reversed(session.events if session is not None else ()):
        if event.type == TOOL_CALL and event.data.get("callId") == exec.call_id:
            turn, step = event.data.get("turn"), event.data.get("step")
            return (
                turn if isinstance(turn, int) else 0,
                step if isinstance(step, int) else 0,
                exec.call_id,
            )
    return (0, 0, exec.call_id)


def _tool_result(result: Mapping[str, Json]) -> ToolResult:
    content = blocks_from_json([expect(b, dict) for b in expect(result.get("content") or [], list)])
    if not result.get("isError"):
        return ToolSuccess(None, content, rendered=True)
    error = result.get("error")
    name = code = None
    if isinstance(error, Mapping):
        name, code = error.get("name"), error.get("code")
    text = " ".join(getattr(b, "text", "") for b in content).removeprefix("Error: ")
    return ToolFailure(
        ToolErrorInfo(
            text, name if isinstance(name, str) else None, code if isinstance(code, str) else None
        ),
        content,
    )
