"""From `dsh.Agent(...)` arguments to the blueprint of its runtimes: the profile rows, the
model route, the tools, approval and store."""

from __future__ import annotations

import inspect
import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from ..agent import AgentOptions
from ..assembly import RuntimeSpec, assemble
from ..llm import Json, LlmAdapter
from ..llm.adapters import parse_model
from ..plugins.approval import ApprovalRequest
from ..plugins.ask_user import QuestionRequest
from ..plugins.usage import UsageLimits
from ..profiles import DEFAULT_ROWS, OTEL_ROW, Profile, load_profile, otel_requested
from ..tools import ToolDefinition, tool
from ._runtime import Blueprint, plugin_rows
from ._stores import MemoryStore, Store

__all__ = ["FACADE_ROWS", "SETTINGS_ROWS", "blueprint"]

_CODING = (
    *("builtin-tools", "web-fetch", "jobs", "subagents"),
    *("instructions", "skills", "ask-user", "plan-mode"),
)
"""Rows that make a coding agent — tools of its own, the workspace's AGENTS.md and skills:
on with `builtin_tools=True`."""

FACADE_ROWS: tuple[dict[str, Json], ...] = tuple(
    {**row, "disabled": True} if row["id"] in _CODING else dict(row)
    for row in DEFAULT_ROWS
    if row["id"] != "persistence"  # the agent mounts its own store
)
"""The default profile as a library agent starts from."""

SETTINGS_ROWS = ("hooks", "approval")
"""Rows that read the user's settings files (`~/.dsh`, `~/.claude`, a trusted workspace's)
when their `settings` key is on: off for a library agent unless it opts in."""


ApprovalArg = Sequence[Mapping[str, str]] | Callable[[ApprovalRequest], object] | None
"""Policy rows, or a callback `(request) -> Decision` (async or plain)."""
QuestionsArg = Callable[[QuestionRequest], object] | None
"""A callback `(request) -> [Answer, …] | None` (async or plain; None: declined)."""
Req = TypeVar("Req")


def blueprint(
    *,
    model: str | LlmAdapter,
    base_url: str | None,
    tools: Sequence[ToolDefinition | Callable[..., object]],
    instructions: str | None,
    approval: ApprovalArg,
    builtin_tools: bool,
    questions: QuestionsArg = None,
    store: Store,
    profile: str | os.PathLike[str] | Sequence[Mapping[str, object]] | None,
    plugins: Sequence[object],
    cwd: Path,
    trusted_extra: Sequence[str],
    settings_files: bool,
    limits: UsageLimits | None = None,
    idle_sessions: int,
) -> Blueprint:
    rows = _settings_files(_profile(profile, builtin_tools), settings_files)
    adapter: LlmAdapter | None = None
    if is_adapter(model):
        adapter = model  # type: ignore[assignment]
        provider = str(getattr(model, "provider", None) or "custom")
        model_id = str(getattr(model, "model", None) or provider)
        if base_url is not None:
            raise ValueError("base_url applies to a model string, not to an adapter object")
    else:
        route = parse_model(str(model), base_url=base_url)
        rows = route.apply(rows)
        provider, model_id = route.provider, route.model
    definitions = tuple(t if isinstance(t, ToolDefinition) else tool(t) for t in tools)
    answerer = None
    policy: list[Mapping[str, str]] = []
    if callable(approval):
        answerer = as_async(approval)
    elif approval is not None:
        policy = [dict(rule) for rule in approval]
    trusted = [*(d.name for d in definitions), *trusted_extra]
    rows = _approval(rows, policy, trusted)
    # The model route is the agent's own (`parse_model`, above): the CLI's flags, `DSH_*`
    # variables and the profile's route do not reach a library agent.
    spec = RuntimeSpec(
        base=rows, workspace=str(cwd), workspace_from="cwd=", route=False, limits=limits
    )
    return Blueprint(
        assembly=assemble(spec),
        options=AgentOptions(provider=provider, model=model_id, system_prompt=instructions),
        adapter=adapter,
        tools=definitions,
        answerer=answerer,
        asker=None if questions is None else as_async(questions),
        plugins=plugin_rows(plugins),
        store=store,
        batch_window_ms=0.0 if isinstance(store, MemoryStore) else 200.0,
        cwd=str(cwd),
        idle_sessions=idle_sessions,
    )


def _profile(
    profile: str | os.PathLike[str] | Sequence[Mapping[str, Any]] | None, builtin_tools: bool
) -> Profile:
    # `DSH_OTEL=1` adds tracing under the caller's rows, as it does for every entry point.
    rows = (*FACADE_ROWS, OTEL_ROW) if otel_requested() else FACADE_ROWS
    base = load_profile(base=rows)
    if isinstance(profile, str | os.PathLike):
        base = load_profile([Path(profile)], base=rows)
    elif profile is not None:
        base = base.layered(profile, source="<profile= rows>")
    on = [{"id": row, "disabled": False} for row in _CODING if base.row(row) is not None]
    if builtin_tools:
        base = base.layered(on, source="<builtin_tools=True>")
    if base.row("persistence") is not None:
        base = base.layered([{"id": "persistence", "disabled": True}], source="<store=>")
    return base


def _settings_files(profile: Profile, on: bool) -> Profile:
    """A library agent is hermetic: the hooks and permissions its user configured for their
    own terminal agent do not reach it unless it says so, by `settings_files=True` or a
    `settings` key in its own rows."""
    for id in SETTINGS_ROWS:
        row = profile.row(id)
        if row is not None and "settings" not in (row.config or {}):
            profile = profile.with_config(id, settings=on)
    return profile


def _approval(profile: Profile, policy: list[Mapping[str, str]], trusted: list[str]) -> Profile:
    """The program's rules first, then the profile's, then `allow` for the tools it gave."""
    row = profile.row("approval")
    if row is None:
        return profile
    existing = list((row.config or {}).get("policy", []))
    allow = [{"tool": name, "action": "allow"} for name in trusted]
    return profile.with_config("approval", policy=[*policy, *existing, *allow])


def is_adapter(model: object) -> bool:
    return not isinstance(model, str) and callable(getattr(model, "stream", None))


def as_async(callback: Callable[[Req], object]) -> Callable[[Req], Awaitable[Any]]:
    """A user's answering callback, sync or async, as an answerer (its result goes to the
    service that asked, which checks it)."""
    if inspect.iscoroutinefunction(callback):
        return callback

    async def answer(request: Req) -> Any:
        return callback(request)

    return answer
