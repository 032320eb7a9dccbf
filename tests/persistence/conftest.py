"""A real runtime (core profile + invariants + persistence + checkpoints) on a ScriptedModel."""

from __future__ import annotations

import itertools
import json
import shutil
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from dsh import Context
from dsh.agent import AgentHandle, AgentOptions, CreateAgentOptions, ResumeAgentOptions
from dsh.loop import ReactLoopAgent
from dsh.persistence import SESSION_PERSISTENCE, JsonlBackend, SqliteBackend, StoredSessions
from dsh.plugins.invariants import INVARIANTS
from dsh.profiles import CORE_ROWS, boot, load_profile
from dsh.session import SessionMeta
from dsh.testing import ScriptedModel
from tests.conftest import FIXTURES

TS_LOGS = FIXTURES / "ts-logs"
CWD = "/tmp/dsh-persistence-tests"
_ids = itertools.count(1)


def rows(
    root: Path | None,
    *,
    backend: str = "jsonl",
    window_ms: float = 200,
    checkpoints: bool = True,
) -> list[dict[str, Any]]:
    """The core rows with invariants first, persistence right after `sessions` (so it is
    disposed after the loop), and the checkpoint policy last."""
    out: list[dict[str, Any]] = [{"id": "invariants", "name": "invariants"}]
    for row in CORE_ROWS:
        if row["id"] in ("persistence", "checkpoints", "invariants"):
            continue
        out.append(dict(row))
        if row["id"] == "sessions" and root is not None:
            config: dict[str, Any] = {"root": str(root), "batch_window_ms": window_ms}
            if backend == "sqlite":
                config["backend"] = "sqlite"
            out.append(
                {"id": "persistence", "name": "dsh.persistence:PersistencePlugin", "config": config}
            )
    if checkpoints and root is not None:
        out.append({"id": "checkpoints", "name": "dsh.plugins.checkpoints:CheckpointPlugin"})
    return out


@dataclass
class Runtime:
    ctx: Context
    model: ScriptedModel
    provider: str = "scripted"
    model_name: str = "scripted"
    handles: list[AgentHandle] = field(default_factory=list)
    checks: Any = None

    def options(self, **options: Any) -> AgentOptions:
        return AgentOptions(**{"provider": self.provider, "model": self.model_name, **options})

    async def agent(self, session_id: str | None = None, **options: Any) -> ReactLoopAgent:
        handle = await self.ctx.agents.create(
            CreateAgentOptions(
                session_id=session_id or f"session-{next(_ids)}",
                meta=SessionMeta(cwd=CWD),
                agent_options=self.options(**options),
            )
        )
        return self._keep(handle)

    async def resume(self, session_id: str, **options: Any) -> ReactLoopAgent:
        handle = await self.ctx.agents.resume(
            ResumeAgentOptions(session_id, agent_options=self.options(**options))
        )
        return self._keep(handle)

    def _keep(self, handle: AgentHandle) -> ReactLoopAgent:
        self.handles.append(handle)
        agent = handle.agent
        assert isinstance(agent, ReactLoopAgent)
        return agent

    @property
    def persistence(self) -> StoredSessions:
        service = self.ctx.require(SESSION_PERSISTENCE)
        assert isinstance(service, StoredSessions)
        return service

    @property
    def violations(self) -> list[Any]:
        return list(self.checks.violations)

    async def close(self) -> None:
        for handle in self.handles:
            await handle.dispose()
        await self.ctx.owner.dispose()


async def boot_runtime(
    root: Path | None,
    *,
    backend: str = "jsonl",
    window_ms: float = 200,
    checkpoints: bool = True,
    provider: str = "scripted",
    model: str = "scripted",
    context_window: int | None = None,
) -> Runtime:
    profile = load_profile(
        base=rows(root, backend=backend, window_ms=window_ms, checkpoints=checkpoints)
    )
    ctx = await boot(profile)
    scripted = ScriptedModel(model=model, context_window=context_window)
    scripted.install(ctx, provider=provider)
    return Runtime(ctx, scripted, provider, model, checks=ctx.require(INVARIANTS))


RuntimeFactory = Callable[..., Awaitable[Runtime]]


@pytest.fixture
async def runtimes() -> AsyncIterator[RuntimeFactory]:
    """Boot runtimes (several may share a root, one after the other); all are closed after
    the test, and none may report an invariant violation."""
    booted: list[Runtime] = []

    async def make(root: Path | None, **kwargs: Any) -> Runtime:
        runtime = await boot_runtime(root, **kwargs)
        booted.append(runtime)
        return runtime

    yield make
    for runtime in booted:
        violations = runtime.violations
        await runtime.close()
        assert violations == [], violations


def stored_sessions(root: Path, backend: str = "jsonl") -> StoredSessions:
    """A fresh view of the store a runtime of `rows(root, backend=...)` writes."""
    if backend == "sqlite":
        return StoredSessions(SqliteBackend(root / "sessions.sqlite3"))
    return StoredSessions(JsonlBackend(root))


def install_fixture_log(source: Path, root: Path) -> tuple[str, Path]:
    """Copy a reference log into `root` at its SPEC path; returns (session id, path)."""
    header = json.loads(source.read_bytes().split(b"\n", 1)[0])
    cwd = header["cwd"].strip("/").replace("/", "-")
    target = root / f"--{cwd}--" / header["id"] / "session.jsonl"
    target.parent.mkdir(parents=True)
    shutil.copyfile(source, target)
    return header["id"], target
