"""`PostgresServer`: a real, throwaway PostgreSQL server in a temporary folder.

For tests and benchmarks of the PostgreSQL session store: `initdb` into a fresh folder, a
server on a free loopback port (its unix socket in the same folder), trust authentication,
one database per caller. `initdb` refuses to run as root, so under root the server runs as
the `postgres` system user when there is one, else as `nobody`.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Self

__all__ = ["PostgresServer", "PostgresUnavailableError", "find_postgres_bin"]

SUPERUSER = "dsh"


class PostgresUnavailableError(RuntimeError):
    """No PostgreSQL server binaries are installed (or the server would not start)."""


def find_postgres_bin() -> Path:
    """The newest `/usr/lib/postgresql/<version>/bin` holding `initdb` and `pg_ctl` (Debian's
    layout), else the directory of `initdb` on `PATH`."""
    candidates = sorted(
        Path("/usr/lib/postgresql").glob("*/bin/initdb"),
        key=lambda p: int(p.parent.parent.name) if p.parent.parent.name.isdigit() else 0,
    )
    on_path = shutil.which("initdb")
    if on_path:
        candidates.insert(0, Path(on_path))
    for initdb in reversed(candidates):
        if (initdb.parent / "pg_ctl").exists():
            return initdb.parent
    raise PostgresUnavailableError(
        "PostgreSQL server binaries not found (looked in /usr/lib/postgresql/*/bin and PATH): "
        "install the `postgresql` package"
    )


class PostgresServer:
    """A PostgreSQL server owned by this object: `start()`, `database(name)`, `stop()`.

    ```python
    with PostgresServer() as server:
        url = server.database("test_1")  # postgresql://dsh@127.0.0.1:<port>/test_1
    ```

    `fsync=False` trades crash safety of the *server* for speed (fine for tests; clients
    dying is unaffected).
    """

    def __init__(self, *, fsync: bool = True) -> None:
        self.fsync = fsync
        self.bin = find_postgres_bin()
        self.dir: Path | None = None
        self.port = 0
        self._user: str | None = None
        self._names = itertools.count(1)

    @property
    def data(self) -> Path:
        assert self.dir is not None, "the server is not started"
        return self.dir / "data"

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/{database}"

    def start(self) -> Self:
        self.dir = Path(tempfile.mkdtemp(prefix="dsh-postgres-"))
        self._user = _unprivileged_user()
        if self._user is not None:
            entry = pwd.getpwnam(self._user)
            os.chown(self.dir, entry.pw_uid, entry.pw_gid)
        self._pg("initdb", "-D", str(self.data), "-U", SUPERUSER, "--auth=trust", "-E", "UTF8")
        self.port = _free_port()
        settings = {
            "listen_addresses": "127.0.0.1",
            "port": str(self.port),
            "unix_socket_directories": str(self.dir),
            "max_connections": "200",
            "fsync": "on" if self.fsync else "off",
            "full_page_writes": "on" if self.fsync else "off",
        }
        options = " ".join(f"-c {key}={value}" for key, value in settings.items())
        log = str(self.dir / "server.log")
        try:
            self._pg("pg_ctl", "-D", str(self.data), "-l", log, "-o", options, "-w", "start")
        except PostgresUnavailableError:
            self.stop()
            raise
        return self

    def database(self, name: str | None = None) -> str:
        """Create a database (a fresh name when none is given); returns its URL."""
        import psycopg

        name = name or f"dsh_{os.getpid()}_{next(self._names)}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def stop(self) -> None:
        """Stop the server (immediately) and remove its folder."""
        if self.dir is None:
            return
        if (self.data / "postmaster.pid").exists():
            with contextlib.suppress(PostgresUnavailableError):
                self._pg("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")
        shutil.rmtree(self.dir, ignore_errors=True)
        self.dir = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _pg(self, program: str, *args: str) -> None:
        extra: dict[str, Any] = {}
        if self._user is not None:
            extra["user"] = self._user
        result = subprocess.run(
            [str(self.bin / program), *args],
            capture_output=True,
            text=True,
            check=False,
            cwd=self.dir,
            **extra,
        )
        if result.returncode != 0:
            detail = (result.stderr or result.stdout).strip().splitlines()
            raise PostgresUnavailableError(
                f"{program} failed ({result.returncode}): {detail[-1] if detail else '?'}"
            )


def _unprivileged_user() -> str | None:
    """None when not root; else a system user that may own the data folder."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        with contextlib.suppress(KeyError):
            pwd.getpwnam(name)
            return name
    raise PostgresUnavailableError("running as root, and neither `postgres` nor `nobody` exists")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port
