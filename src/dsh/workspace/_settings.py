"""Settings files in Claude Code's shape, layered user → project → local."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import msgspec

from ._home import dsh_home, read_json_object
from ._trust import Trust

if TYPE_CHECKING:
    from ..llm import Json  # (a type only: the workspace loads nothing of the core)

__all__ = ["Settings", "SettingsLayer", "SettingsSource", "load_settings", "settings_sources"]

Scope = Literal["user", "project", "local"]


class SettingsSource(msgspec.Struct, frozen=True):
    path: Path
    scope: Scope
    compat: bool
    """True for Claude Code's `.claude/` folders (read when `claude_compat` is on)."""

    @property
    def needs_trust(self) -> bool:
        """Files inside a workspace come with the repository: they need the user's trust."""
        return self.scope != "user"


class SettingsLayer(msgspec.Struct, frozen=True):
    source: SettingsSource
    data: dict[str, Json]
    trusted: bool


class Settings(msgspec.Struct, frozen=True):
    """The settings files found for one workspace, earliest first; later layers add to
    earlier ones. Layers of an untrusted workspace are kept (to show them) but
    `values()` skips them unless asked."""

    workspace: Path
    layers: tuple[SettingsLayer, ...] = msgspec.field(default=())

    def values(self, key: str, *, untrusted: bool = False) -> Iterator[tuple[SettingsSource, Json]]:
        """Each layer's value for a top-level `key`, in layer order."""
        for layer in self.layers:
            if key in layer.data and (layer.trusted or untrusted):
                yield layer.source, layer.data[key]

    @property
    def untrusted(self) -> tuple[SettingsLayer, ...]:
        return tuple(layer for layer in self.layers if not layer.trusted)


def settings_sources(
    workspace: Path, *, claude_compat: bool = True, home: Path | None = None
) -> list[SettingsSource]:
    """The files read for `workspace`, in layer order: user, project, local. Within a scope
    Claude Code's file comes first, so dsh's own file has the last word."""
    home = dsh_home() if home is None else home
    sources: list[SettingsSource] = []
    for scope, name in _FILES:
        base = (
            (Path.home() / ".claude", home)
            if scope == "user"
            else (
                workspace / ".claude",
                workspace / ".dsh",
            )
        )
        if claude_compat:
            sources.append(SettingsSource(base[0] / name, scope, True))
        sources.append(SettingsSource(base[1] / name, scope, False))
    return sources


_FILES: tuple[tuple[Scope, str], ...] = (
    ("user", "settings.json"),
    ("project", "settings.json"),
    ("local", "settings.local.json"),
)


def load_settings(
    workspace: Path,
    *,
    claude_compat: bool = True,
    home: Path | None = None,
    trust: Trust | None = None,
) -> Settings:
    """Read every settings file of `workspace` that exists. A file that is not a JSON
    object raises `SettingsError` naming it."""
    trust = Trust(home) if trust is None else trust
    trusted = trust.is_trusted(workspace)
    layers = []
    for source in settings_sources(workspace, claude_compat=claude_compat, home=home):
        data = read_json_object(source.path)
        if data is not None:
            layers.append(SettingsLayer(source, data, trusted or not source.needs_trust))
    return Settings(workspace, tuple(layers))
