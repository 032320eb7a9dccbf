"""Seams the built-in tools consume and plugins provide: the command sandbox (`SANDBOX`,
provided by `dsh.plugins.sandbox`), the spill store for oversized output (`SPILLS`,
provided by `dsh.plugins.spill`) and an editor's files (`EDITOR_FILES`, provided by the ACP
agent, `dsh.acp`). Tools look them up at call time; without a provider they run unconfined,
cannot spill, and read and write the local disk."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal, Protocol

import msgspec

from ..kernel import ServiceKey
from ._types import ToolExecution

__all__ = [
    "EDITOR_FILES",
    "SANDBOX",
    "SANDBOX_MODES",
    "SPILLS",
    "CommandSandbox",
    "Confinement",
    "EditorFiles",
    "SandboxMode",
    "SpillStore",
    "SpillWriter",
]

SandboxMode = Literal["read-only", "workspace-write", "danger-full-access"]
SANDBOX_MODES: tuple[SandboxMode, ...] = ("read-only", "workspace-write", "danger-full-access")
"""From the narrowest to the widest."""


class Confinement(msgspec.Struct, frozen=True):
    """How one command runs: `argv` to start (the command itself, or wrapped in the
    sandbox), the session's `mode`, whether `argv` is actually confined, the file descriptors
    the process must inherit (`pass_fds`), and `release`, which the runner calls once the
    process has ended, whether it started or not (it closes those descriptors, among others)."""

    argv: tuple[str, ...]
    mode: SandboxMode
    confined: bool
    pass_fds: tuple[int, ...] = ()
    release: Callable[[], None] | None = None


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


class EditorFiles(Protocol):
    """Text files as an editor holds them, unsaved changes included: `read`, `write` and
    `edit` go through it, instead of the local disk, for the calls it serves."""

    def serves(self, exec: ToolExecution) -> bool:
        """Whether this call's files are the editor's (its session is driven by one)."""
        ...

    async def read_text(self, exec: ToolExecution, path: str) -> str:
        """The text of `path` (absolute); `FileNotFoundError` when there is no such file,
        `OSError` when the editor cannot read it."""
        ...

    async def write_text(self, exec: ToolExecution, path: str, text: str) -> None:
        """Make `text` the content of `path` (absolute), creating it if needed; `OSError`
        when the editor cannot."""
        ...


SANDBOX: ServiceKey[CommandSandbox] = ServiceKey("sandbox")
SPILLS: ServiceKey[SpillStore] = ServiceKey("spills")
EDITOR_FILES: ServiceKey[EditorFiles] = ServiceKey("editor_files")
