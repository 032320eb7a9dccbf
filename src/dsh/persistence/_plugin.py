"""`PersistencePlugin` (name `persistence`): provides `ctx.session_persistence`."""

from __future__ import annotations

import asyncio
import os
import tempfile
from pathlib import Path
from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..kernel import Context
from ._backend import SessionBackend
from ._jsonl import JsonlBackend
from ._stored import StoredSessions
from ._types import SESSION_PERSISTENCE, PersistenceError

__all__ = [
    "PersistenceConfig",
    "PersistencePlugin",
    "default_root",
    "mount_persistence",
    "store_config",
]

ROOT_ENV = "DSH_SESSION_ROOT"
STORE_ENV = "DSH_SESSION_STORE"
SQLITE_FILE = "sessions.sqlite3"


class PersistenceConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    backend: Literal["jsonl", "sqlite", "postgres"] | None = None
    """Default: `postgres` when `url` is set, else what `$DSH_SESSION_STORE` names, else
    `jsonl`."""
    root: str | None = None
    """The sessions root (JSONL), or the directory of `sessions.sqlite3` (SQLite).
    Default: `$DSH_SESSION_ROOT`, else `~/.dsh/sessions`."""
    path: str | None = None
    """SQLite only: the database file (overrides `root`)."""
    url: str | None = None
    """PostgreSQL only: the connection URL (`postgresql://user@host:port/db`)."""
    pool_size: int = Field(default=4, ge=1)
    """PostgreSQL only: connections for reads and writes (one more holds the leases)."""
    compression: Literal["none", "zstd"] = "none"
    """JSONL only: the encoding of new logs (`zstd` needs the `zstandard` package)."""
    batch_window_ms: float = Field(default=200.0, ge=0)
    """How long the first pending event waits for company before its batch is written."""


def default_root(configured: str | None = None) -> Path:
    """`configured`, else `$DSH_SESSION_ROOT`, else `~/.dsh/sessions` (user-expanded)."""
    root = configured or os.environ.get(ROOT_ENV) or "~/.dsh/sessions"
    return Path(root).expanduser()


def check_writable(folder: Path, what: str) -> None:
    """Create `folder` if needed and prove a file can be written there, so an unusable
    session root stops the start (one line naming it and what to do), never a turn."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise PersistenceError(
            f"{what} {folder} is not a writable directory ({reason}): set {ROOT_ENV} "
            "(or the persistence row's root) to a folder you can write"
        ) from None


def store_config(spec: str) -> dict[str, str]:
    """The persistence config of a store named by one string: a PostgreSQL URL
    (`postgresql://…` or `postgres://…`), `sqlite:PATH` (a database file), or a JSONL root
    (`jsonl:DIR` or a plain path)."""
    if spec.startswith(("postgresql://", "postgres://")):
        return {"backend": "postgres", "url": spec}
    if spec.startswith("sqlite:"):
        return {"backend": "sqlite", "path": spec.removeprefix("sqlite:").removeprefix("//")}
    if "://" in spec:
        raise PersistenceError(
            f"unknown session store {spec.split('://')[0]!r}: use postgresql://…, "
            "sqlite:PATH or a directory (JSONL)"
        )
    return {"backend": "jsonl", "root": spec.removeprefix("jsonl:")}


def resolve_config(config: PersistenceConfig) -> PersistenceConfig:
    """Fill in the backend: the row's, else `postgres` for a `url`, else `$DSH_SESSION_STORE`,
    else JSONL."""
    if config.backend is not None:
        return config
    if config.url:
        return config.model_copy(update={"backend": "postgres"})
    spec = os.environ.get(STORE_ENV)
    if spec:
        return config.model_copy(update=store_config(spec))
    return config.model_copy(update={"backend": "jsonl"})


def open_backend(config: PersistenceConfig) -> SessionBackend:
    config = resolve_config(config)
    if config.backend == "postgres":
        if not config.url:
            raise PersistenceError(
                "the postgres backend needs a url (the row's `url`, or DSH_SESSION_STORE)"
            )
        from ._postgres import PostgresBackend

        return PostgresBackend(config.url, pool_size=config.pool_size)
    if config.backend == "sqlite":
        path = Path(config.path).expanduser() if config.path else None
        path = path or default_root(config.root) / SQLITE_FILE
        check_writable(path.parent, "the session database's folder")
        from ._sqlite import SqliteBackend

        return SqliteBackend(path)
    if config.compression == "zstd":
        from ._zstd import compress_frame

        compress_frame(b"")  # fail at start, with the install hint, if zstandard is missing
    check_writable(default_root(config.root), "the session root")
    return JsonlBackend(default_root(config.root), compression=config.compression)


def mount_persistence(
    ctx: Context, backend: SessionBackend, *, batch_window_ms: float = 200.0
) -> StoredSessions:
    """Provide `ctx.session_persistence` over `backend` and persist every session published
    in `ctx`'s tree, until `ctx`'s owner is disposed (then: a last drain, then
    `backend.close()`). Use it to mount a backend of your own."""
    service = StoredSessions(backend, batch_window_ms=batch_window_ms)
    ctx.owner.effect(backend.close)  # effects run LIFO: closed after the last drain
    service.attach(ctx)
    ctx.provide(SESSION_PERSISTENCE, service)
    return service


class PersistencePlugin:
    """Session persistence: JSONL (default), SQLite or PostgreSQL, with the write coordinator."""

    name: ClassVar[str] = "persistence"
    Config = PersistenceConfig

    @staticmethod
    async def apply(ctx: Context, config: PersistenceConfig) -> None:
        if resolve_config(config).backend == "postgres":  # it connects to a server
            backend = await asyncio.to_thread(open_backend, config)
        else:  # a folder probe: no thread to start and wait for
            backend = open_backend(config)
        mount_persistence(ctx, backend, batch_window_ms=config.batch_window_ms)
