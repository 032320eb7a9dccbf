"""`PersistencePlugin` (name `persistence`): provides `ctx.session_persistence`."""

from __future__ import annotations

import asyncio
import os
import tempfile
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

import msgspec
from msgspec import Meta

from .._context import Context
from ..kernel import ConfigRecord
from ..session import SESSIONS
from ..workspace import dsh_home, private_dirs
from ._backend import SessionBackend
from ._jsonl import Compression, JsonlBackend, scan_root
from ._stored import StoredSessions
from ._types import SESSION_PERSISTENCE, PersistenceError

__all__ = [
    "PersistenceConfig",
    "PersistencePlugin",
    "default_root",
    "mount_persistence",
    "reference_home",
    "store_config",
]

ROOT_ENV = "DSH_SESSION_ROOT"
STORE_ENV = "DSH_SESSION_STORE"
SQLITE_FILE = "sessions.sqlite3"


class PersistenceConfig(ConfigRecord):
    backend: Literal["jsonl", "sqlite", "postgres"] | None = None
    """Default: `postgres` when `url` is set, else what `$DSH_SESSION_STORE` names, else
    `jsonl`."""
    root: str | None = None
    """The sessions root (JSONL), or the directory of `sessions.sqlite3` (SQLite).
    Default: `$DSH_SESSION_ROOT`, else `$DSH_HOME/sessions` (`~/.dsh/sessions`)."""
    format: Literal["auto", "v0", "v4"] = "auto"
    """The format of new session logs: `v0` (the reference runtime 0.1.1's) or `v4` (0.2.1's,
    which that runtime resumes). `auto`: v4 when the JSONL root already holds format-4 logs
    or is the sessions folder of a `$DSH_HOME` the reference runtime uses, else v0."""
    path: str | None = None
    """SQLite only: the database file (overrides `root`)."""
    url: str | None = None
    """PostgreSQL only: the connection URL (`postgresql://user@host:port/db`)."""
    pool_size: Annotated[int, Meta(ge=1)] = 4
    """PostgreSQL only: connections for reads and writes (one more holds the leases)."""
    compression: Literal["auto", "none", "zstd"] = "auto"
    """JSONL only: the encoding of new logs (`zstd` needs the `zstandard` package). `auto`:
    the one the root's logs of the same format use, else zstd for format 4 (the reference's
    default: it refuses a root that mixes both), else none."""
    batch_window_ms: Annotated[float, Meta(ge=0)] = 200.0
    """How long the first pending event waits for company before its batch is written."""


def default_root(configured: str | None = None) -> Path:
    """`configured`, else `$DSH_SESSION_ROOT`, else `$DSH_HOME/sessions` (`~/.dsh/sessions`
    without `DSH_HOME`), user-expanded."""
    root = configured or os.environ.get(ROOT_ENV)
    return Path(root).expanduser() if root else dsh_home() / "sessions"


def reference_home(home: Path) -> bool:
    """Whether the reference runtime uses `home` as its `DSH_HOME` (its profile or state
    files are there)."""
    if (home / "storages").is_dir() or (home / "cordis.patch.yml").is_file():
        return True
    profiles = home / "profiles"
    return profiles.is_dir() and any(profiles.glob("*/cordis.yml"))


def check_writable(folder: Path, what: str) -> None:
    """Create `folder` if needed and prove a file can be written there, so an unusable
    session root stops the start (one line naming it and what to do), never a turn. The
    folders it makes are 0700."""
    try:
        private_dirs(folder)
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
        return msgspec.structs.replace(config, backend="postgres")
    spec = os.environ.get(STORE_ENV)
    if spec:
        keys: dict[str, Any] = store_config(spec)  # (values of the config's own keys)
        return msgspec.structs.replace(config, **keys)
    return msgspec.structs.replace(config, backend="jsonl")


def sqlite_path(config: PersistenceConfig) -> Path:
    """The database file of a SQLite config: `path`, else `sessions.sqlite3` in the root."""
    return (
        Path(config.path).expanduser() if config.path else default_root(config.root) / SQLITE_FILE
    )


def describe_store(config: PersistenceConfig) -> str:
    """Where the sessions of `config` are kept, for people (`dsh config show`); a PostgreSQL
    URL is not shown (it may hold a password)."""
    config = resolve_config(config)
    if config.backend == "postgres":
        return "postgres (the row's url, or $DSH_SESSION_STORE)"
    if config.backend == "sqlite":
        return f"sqlite at {sqlite_path(config)}"
    return f"jsonl in {default_root(config.root)}"


def open_backend(config: PersistenceConfig) -> tuple[SessionBackend, int]:
    """The backend of `config`, and the format version of the new logs it will hold."""
    config = resolve_config(config)
    version = 4 if config.format == "v4" else 0
    if config.backend == "postgres":
        if not config.url:
            raise PersistenceError(
                "the postgres backend needs a url (the row's `url`, or DSH_SESSION_STORE)"
            )
        from ._postgres import PostgresBackend

        return PostgresBackend(config.url, pool_size=config.pool_size), version
    if config.backend == "sqlite":
        path = sqlite_path(config)
        check_writable(path.parent, "the session database's folder")
        from ._sqlite import SqliteBackend

        return SqliteBackend(path), version
    root = default_root(config.root)
    check_writable(root, "the session root")
    contents = scan_root(root)
    if config.format == "auto" and (
        4 in contents.versions or (root == dsh_home() / "sessions" and reference_home(dsh_home()))
    ):
        version = 4
    compression: Compression
    if config.compression != "auto":
        compression = config.compression
    else:
        # Follow the root's logs of this format: the reference refuses a root whose logs it
        # shares in both encodings. Its default is zstd.
        compression = contents.compression(version) or ("zstd" if version == 4 else "none")
    if compression == "zstd":
        from ._zstd import compress_frame

        compress_frame(b"")  # fail at start, with the install hint, if zstandard is missing
    return JsonlBackend(root, compression=compression), version


def mount_persistence(
    ctx: Context,
    backend: SessionBackend,
    *,
    batch_window_ms: float = 200.0,
    format_version: int = 0,
) -> StoredSessions:
    """Provide `ctx.session_persistence` over `backend` and persist every session published
    in `ctx`'s tree, until `ctx`'s owner is disposed (then: a last drain, then
    `backend.close()`). New sessions get log format `format_version` (0 or 4) meanwhile.
    Use it to mount a backend of your own."""
    service = StoredSessions(backend, batch_window_ms=batch_window_ms)
    ctx.owner.effect(backend.close)  # effects run LIFO: closed after the last drain
    service.attach(ctx)
    if format_version:
        ctx.owner.effect(ctx.require(SESSIONS).use_format(format_version))
    ctx.provide(SESSION_PERSISTENCE, service)
    return service


class PersistencePlugin:
    """Session persistence: JSONL (default), SQLite or PostgreSQL, with the write coordinator."""

    name: ClassVar[str] = "persistence"
    Config = PersistenceConfig

    @staticmethod
    async def apply(ctx: Context, config: PersistenceConfig) -> None:
        # It may connect to a server, or look at the root's logs.
        backend, version = await asyncio.to_thread(open_backend, config)
        mount_persistence(
            ctx, backend, batch_window_ms=config.batch_window_ms, format_version=version
        )
