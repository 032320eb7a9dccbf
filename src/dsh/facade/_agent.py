"""`dsh.Agent`: an agent in a few lines, over the same kernel, profile and loop as the rest."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Generic

from typing_extensions import TypeVar

from ..agent import DEFAULT_EFFORT, AgentOptions, RunResult, switch_note
from ._blueprint import ApprovalArg, QuestionsArg, blueprint
from ._output import FINAL_RESULT
from ._run import RunPlan, StreamedRun
from ._runtime import Runtime
from ._settings import ModelSettings
from ._stores import MemoryStore, Store

if TYPE_CHECKING:
    from ..llm import LlmAdapter
    from ..plugins.rewind import Mode, PromptInfo, RewindReport, Rewinds, TurnDiff
    from ..plugins.usage import UsageLimits
    from ..profiles import Profile
    from ..tools import ToolDefinition
    from ._runtime import Blueprint, Runtime

__all__ = ["Agent"]

OutputT = TypeVar("OutputT", default=str)

DEFAULT_MODEL = "deepseek:deepseek-v4-flash"


class Agent(Generic[OutputT]):
    """An agent: a model, tools, instructions; `run` a prompt and get its result.

    ```python
    agent = dsh.Agent("openai:gpt-4.1-mini", tools=[word_count], instructions="Be terse.")
    result = agent.run_sync("How many words are in 'one two three'?")
    print(result.output, result.usage)
    ```

    `model` is a model string (`deepseek:<model>`, `openai:<model>`, `anthropic:<model>`, a
    route the profile mounts; see `dsh.llm.adapters.parse_model`; default `$DSH_MODEL`, else
    DeepSeek) or an adapter object (e.g. `dsh.testing.ScriptedModel`). Tools given here are
    trusted (allowed without asking); `builtin_tools=True` adds the coding tools, whose
    writes and commands ask through `approval=` (policy rows, or a callback
    `async def approve(request) -> dsh.Decision`); the model asks the person through
    `questions=`, a callback `(request: dsh.QuestionRequest) -> [dsh.Answer, …] | None`
    (None declines; without it, `ask_user_question` is not offered). Each run gets a new
    session unless `session=` names one (an existing one continues); sessions live in
    memory unless `store=` is `dsh.JsonlStore(path)` or `dsh.SqliteStore(path)`; a session
    stays loaded while a run uses it and after it among the `idle_sessions` most recently
    used (past that it is unloaded, and resumed from the store when named again). The agent
    is hermetic:
    the hooks and permissions of the user's settings files (`~/.dsh`, `~/.claude`) apply
    only with `settings_files=True`.

    The agent boots its runtime on first use in the running event loop and keeps it until
    `await agent.aclose()` (or `async with agent:`); `run_sync` boots and closes one itself.
    """

    def __init__(
        self,
        model: str | LlmAdapter | None = None,
        *,
        base_url: str | None = None,
        tools: Sequence[ToolDefinition | Callable[..., object]] = (),
        instructions: str | None = None,
        output_type: type[OutputT] | None = None,
        output_retries: int = 2,
        settings: ModelSettings | None = None,
        approval: ApprovalArg = None,
        questions: QuestionsArg = None,
        builtin_tools: bool = False,
        store: Store | None = None,
        profile: str | os.PathLike[str] | Sequence[Mapping[str, object]] | None = None,
        plugins: Sequence[object] = (),
        cwd: str | os.PathLike[str] | None = None,
        settings_files: bool = False,
        limits: UsageLimits | None = None,
        idle_sessions: int = 100,
    ) -> None:
        if output_retries < 0:
            raise ValueError(f"output_retries must be >= 0, got {output_retries}")
        if not isinstance(idle_sessions, int) or idle_sessions < 0:
            raise ValueError(f"idle_sessions must be an int >= 0, got {idle_sessions!r}")
        self.settings = settings or ModelSettings()
        self.output_type = output_type
        self.output_retries = output_retries
        self._blueprint: Blueprint = blueprint(
            model=model if model is not None else os.environ.get("DSH_MODEL") or DEFAULT_MODEL,
            base_url=base_url,
            tools=tools,
            instructions=instructions,
            approval=approval,
            questions=questions,
            builtin_tools=builtin_tools,
            store=store or MemoryStore(),
            profile=profile,
            plugins=plugins,
            cwd=Path(cwd or os.getcwd()).resolve(),
            trusted_extra=(FINAL_RESULT,) if output_type is not None else (),
            settings_files=settings_files,
            limits=limits,
            idle_sessions=idle_sessions,
        )
        self._runtime: Runtime | None = None
        self._starting: tuple[asyncio.AbstractEventLoop, asyncio.Lock] | None = None
        """Held while a runtime starts (one lock per event loop): callers share one start."""

    @property
    def options(self) -> AgentOptions:
        """The provider, model and instructions every session of this agent runs with."""
        return self._blueprint.options

    @property
    def profile(self) -> Profile:
        """The plugin rows this agent boots (`dsh config show` prints the same shape)."""
        return self._blueprint.assembly.profile

    # -- runs ----------------------------------------------------------------------------------

    def run_stream(
        self, prompt: str, *, session: str | None = None, settings: ModelSettings | None = None
    ) -> StreamedRun[OutputT]:
        """Start a run as an async context manager: stream its text or events, cancel it,
        read its result at the end."""
        return StreamedRun(self._ensure_runtime, self._plan(prompt, session, settings))

    async def run(
        self, prompt: str, *, session: str | None = None, settings: ModelSettings | None = None
    ) -> RunResult[OutputT]:
        """Run `prompt` to the end: a new session, or `session` continued (created if new).
        Raises `dsh.RunError` when the run fails (its `result` holds what it produced)."""
        plan = self._plan(prompt, session, settings, streamed=False)
        async with StreamedRun[OutputT](self._ensure_runtime, plan) as run:
            return await run.wait()

    def _plan(
        self,
        prompt: str,
        session: str | None,
        settings: ModelSettings | None,
        *,
        streamed: bool = True,
    ) -> RunPlan:
        merged = self.settings.merged(settings)
        return RunPlan(prompt, session, merged, self.output_type, self.output_retries, streamed)

    async def set_model(
        self, model: str, *, session: str, reasoning_effort: str | None = None
    ) -> str:
        """Switch `session` to `model` (`provider:model`, as `dsh.Agent(model)` takes it, on a
        route this agent's runtime serves) and `reasoning_effort` (None: the model's
        default) from its next request on. The history carries over; the switch is the
        durable event `model/switch`. Returns a one-line note for the user: the new model,
        and that the cached prompt prefix is re-paid once."""
        from ..llm.adapters import parse_model

        route = parse_model(model)
        runtime = await self._ensure_runtime()
        async with runtime.using(session) as agent:
            effort = DEFAULT_EFFORT if reasoning_effort is None else reasoning_effort
            return switch_note(agent, route=(route.provider, route.model), effort=effort)

    def run_sync(
        self, prompt: str, *, session: str | None = None, settings: ModelSettings | None = None
    ) -> RunResult[OutputT]:
        """`run` for code without an event loop: boots a runtime, runs, closes it (the
        sessions stay in the store). Ctrl-C cancels the run."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            raise RuntimeError(
                "run_sync() cannot be called from a running event loop: await agent.run(...)"
            )

        async def once() -> RunResult[OutputT]:
            try:
                return await self.run(prompt, session=session, settings=settings)
            finally:
                await self.aclose()

        return asyncio.run(once())

    # -- rewind --------------------------------------------------------------------------------

    async def rewind(
        self,
        session: str,
        to: int | None = None,
        *,
        mode: Mode = "both",
        undo: bool = False,
        force: bool = False,
        dry_run: bool = False,
    ) -> RewindReport:
        """Take `session`'s workspace (`mode="code"`), history (`"conversation"`) or both
        back to just before prompt `to` ran, or (`undo=True`) undo its last rewind. Files
        changed outside dsh since then are kept and reported unless `force`; `dry_run` only
        says what would change. Raises `dsh.plugins.rewind.RewindError` when it cannot, and
        `LookupError` for a session that is not stored (none is created)."""
        runtime, rewinds = await self._rewinds()
        async with runtime.using(session, create=False) as agent:
            return await rewinds.rewind(
                agent.session, to, mode=mode, undo=undo, force=force, dry_run=dry_run
            )

    async def prompts(self, session: str) -> list[PromptInfo]:
        """The prompts of `session` a rewind can go back to, with the files each changed."""
        runtime, rewinds = await self._rewinds()
        async with runtime.using(session, create=False) as agent:
            return await rewinds.prompts(agent.session)

    async def diff(self, session: str, turn: int | None = None) -> TurnDiff:
        """What turn `turn` of `session` (default: the last) changed in the workspace."""
        runtime, rewinds = await self._rewinds()
        async with runtime.using(session, create=False) as agent:
            return await rewinds.diff(agent.session, turn)

    async def _rewinds(self) -> tuple[Runtime, Rewinds]:
        from ..plugins.rewind import REWIND, RewindError

        runtime = await self._ensure_runtime()
        rewinds = runtime.ctx.get(REWIND)
        if rewinds is None:
            raise RewindError("this agent's profile has no rewind plugin (keep the `rewind` row)")
        return runtime, rewinds

    # -- the runtime ---------------------------------------------------------------------------

    async def _ensure_runtime(self) -> Runtime:
        loop = asyncio.get_running_loop()
        runtime = self._runtime
        if runtime is not None and runtime.loop is not loop:
            if runtime.loop.is_running():
                raise RuntimeError(
                    "this agent's runtime runs in another event loop (thread): use one agent "
                    "per event loop"
                )
            self._runtime = runtime = None  # its loop has ended, and the runtime with it
        if runtime is not None:
            return runtime
        if self._starting is None or self._starting[0] is not loop:
            self._starting = (loop, asyncio.Lock())
        # In the caller's task: a caller cancelled during the start unwinds it (`start`
        # disposes what it booted), and the next caller starts again.
        async with self._starting[1]:
            runtime = self._runtime
            if runtime is None or runtime.loop is not loop:
                runtime = self._runtime = await Runtime.start(self._blueprint)
        return runtime

    async def aclose(self) -> None:
        """Stop the runtime: live sessions are flushed to the store, plugins unloaded."""
        runtime, self._runtime = self._runtime, None
        if runtime is not None and runtime.loop is asyncio.get_running_loop():
            await runtime.close()

    def close(self) -> None:
        """`aclose` for code without an event loop."""
        runtime = self._runtime
        if runtime is None or runtime.loop.is_closed():
            self._runtime = None
            return
        if runtime.loop.is_running():
            raise RuntimeError("close() inside the event loop: use await agent.aclose()")
        runtime.loop.run_until_complete(self.aclose())

    async def __aenter__(self) -> Agent[OutputT]:
        await self._ensure_runtime()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        options = self._blueprint.options
        return f"<dsh.Agent {options.provider}:{options.model}>"
