"""A real runtime (default profile + invariants) driven by a ScriptedModel."""

from __future__ import annotations

import itertools
import os
import stat
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from dsh import Context
from dsh.agent import AgentHandle, AgentOptions, CreateAgentOptions
from dsh.loop import ReactLoopAgent
from dsh.plugins.invariants import INVARIANTS
from dsh.profiles import CORE_ROWS, boot, load_profile
from dsh.session import SessionMeta
from dsh.testing import PostgresServer, PostgresUnavailableError, ScriptedModel

_ids = itertools.count(1)

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures"
"""The reference runtime's recorded logs and transcripts, kept inside the repository (see its
README): a user's clone has nothing beside it."""


def home_and_workspace(base: Path) -> tuple[Path, Path]:
    """`base/home` (a `DSH_HOME`, not created) and the workspace `base/ws` holding the
    fixtures' `hello.txt`, as the reference's recorded runs had it."""
    ws = base / "ws"
    ws.mkdir()
    (ws / "hello.txt").write_text("hello\nfrom the\nbenchmark\n")
    return base / "home", ws


@dataclass
class Runtime:
    ctx: Context
    model: ScriptedModel
    handles: list[AgentHandle] = field(default_factory=list)

    async def agent(self, cwd: str = "/tmp/dsh-conformance", **options: Any) -> ReactLoopAgent:
        handle = await self.ctx.agents.create(
            CreateAgentOptions(
                session_id=f"session-{next(_ids)}",
                meta=SessionMeta(cwd=cwd),
                agent_options=AgentOptions(
                    **{"provider": "scripted", "model": "scripted", **options}
                ),
            )
        )
        self.handles.append(handle)
        agent = handle.agent
        assert isinstance(agent, ReactLoopAgent)
        return agent

    @property
    def violations(self) -> list[Any]:
        return self.ctx.require(INVARIANTS).violations


def types(agent: ReactLoopAgent, start: int = 0) -> list[str]:
    return [e.type for e in agent.session.events[start:]]


def turn_end(agent: ReactLoopAgent) -> dict[str, Any]:
    ends = [e for e in agent.session.events if e.type == "turn/end"]
    return dict(ends[-1].data["reason"])


@pytest.fixture
def umask_022() -> Iterator[None]:
    """The common umask (0o022: new files 0644, folders 0755 unless asked otherwise), put
    back after the test."""
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def mode(path: Path) -> int:
    """The permission bits of `path` (0o600, 0o700, …)."""
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture(autouse=True)
def session_root(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Sessions of the default profile go to a temporary root, never to ~/.dsh."""
    root = tmp_path_factory.mktemp("sessions")
    monkeypatch.setenv("DSH_SESSION_ROOT", str(root))
    # The user's own settings (hooks in ~/.claude or ~/.dsh) never take part in a test.
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("DSH_HOME", str(home / ".dsh"))
    return root


@pytest.fixture
def ctx_plugins() -> Sequence[Any]:
    """What the `ctx` fixture loads: plugins, or `(plugin, config)` pairs. A test folder's
    conftest (or a test module) overrides it."""
    return ()


@pytest.fixture
async def ctx(ctx_plugins: Sequence[Any]) -> AsyncIterator[Context]:
    """A root context with `ctx_plugins` loaded; disposed after the test."""
    async with Context() as root:
        for item in ctx_plugins:
            plugin, config = item if isinstance(item, tuple) else (item, None)
            await root.plugin(plugin, config)
        yield root


@pytest.fixture
async def runtime() -> AsyncIterator[Runtime]:
    profile = load_profile(base=[{"id": "invariants", "name": "invariants"}, *CORE_ROWS])
    ctx = await boot(profile)
    model = ScriptedModel()
    model.install(ctx)
    rt = Runtime(ctx, model)
    invariants = ctx.require(INVARIANTS)
    yield rt
    for handle in rt.handles:
        await handle.dispose()
    await ctx.owner.dispose()
    assert invariants.violations == [], invariants.violations


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """One real PostgreSQL server for the test session (initdb into a temporary folder)."""
    try:
        server = PostgresServer(fsync=False).start()
    except PostgresUnavailableError as exc:
        pytest.skip(f"no PostgreSQL server to test against: {exc}")
    yield server
    server.stop()


@pytest.fixture
def postgres_url(postgres_server: PostgresServer) -> str:
    """A fresh, empty database on the test session's PostgreSQL server."""
    return postgres_server.database()
