"""Two seams the built-in tools consume and plugins provide: the command sandbox (`SANDBOX`,
provided by `dsh.plugins.sandbox`) and the spill store for oversized output (`SPILLS`,
provided by `dsh.plugins.spill`). Tools look them up at call time; without a provider they
run unconfined and cannot spill."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from ..kernel import ServiceKey
from ._types import ToolExecution

__all__ = [
    "SANDBOX",
    "SANDBOX_MODES",
    "SPILLS",
    "CommandSandbox",
    "Confinement",
    "SandboxMode",
    "SpillStore",
    "SpillWriter",
]

SandboxMode = Literal["read-only", "workspace-write", "danger-full-access"]
SANDBOX_MODES: tuple[SandboxMode, ...] = ("read-only", "workspace-write", "danger-full-access")
"""From the narrowest to the widest."""


@dataclass(frozen=True, slots=True)
class Confinement:
    """How one command runs: `argv` to start (the command itself, or wrapped in the
    sandbox), the session's `mode`, and whether `argv` is actually confined."""

    argv: tuple[str, ...]
    mode: SandboxMode
    confined: bool


class CommandSandbox(Protocol):
    """Wraps a command line so that it runs under the calling session's sandbox mode."""

    async def confine(
        self, exec: ToolExecution, argv: Sequence[str], *, cwd: str, roots: Sequence[str]
    ) -> Confinement:
        """`argv` as it must be started in `cwd`; `roots` are the workspace directories
        (writable in `workspace-write`)."""
        ...


class SpillWriter(Protocol):
    """A spill file being written (synchronously, in chunks)."""

    @property
    def path(self) -> str:
        """The path the model is told (absolute)."""
        ...

    def write(self, data: bytes) -> None: ...

    async def commit(self) -> str:
        """Close the file and make it durable where the store keeps spills; the path."""
        ...


class SpillStore(Protocol):
    """Where a session's oversized tool output goes, and how `read` gets it back."""

    def writer(self, exec: ToolExecution, name: str) -> SpillWriter:
        """A new spill file of the calling session, named after `name`."""
        ...

    async def save(self, exec: ToolExecution, name: str, text: str) -> str:
        """Store `text` as a new spill file; its path."""
        ...

    async def readable(self, exec: ToolExecution, path: str) -> str | None:
        """The local file behind `path` if it is a spill this store holds (restored first
        if needed), else None."""
        ...


SANDBOX: ServiceKey[CommandSandbox] = ServiceKey("sandbox")
SPILLS: ServiceKey[SpillStore] = ServiceKey("spills")
