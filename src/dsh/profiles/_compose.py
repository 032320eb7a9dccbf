"""Composition: YAML profiles of plugin rows, layered by id, booted into a `dsh.Context`."""

from __future__ import annotations

import functools
import importlib
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec
from msgspec.structs import replace

from .._context import Context
from ..kernel import Acquire, ConfigError, ConfigRecord, PluginError, load_config, validate_config
from ._builtin import BUILTIN_PLUGINS, OTEL_ROW, default_rows

if TYPE_CHECKING:
    from importlib import metadata

__all__ = [
    "ENTRY_POINT_GROUP",
    "CompositionError",
    "PluginRow",
    "Profile",
    "boot",
    "load_profile",
    "resolve_plugin",
    "with_otel",
]

ENTRY_POINT_GROUP = "dsh.plugins"
DEFAULT_PROFILE = "<default profile>"


class CompositionError(Exception):
    """A profile could not be read, layered, resolved or booted. The message names the file,
    the row id and the key path."""


class _RowData(ConfigRecord):
    """A row as a profile layer states it: only `id` is required."""

    id: str
    name: str | None = None
    config: dict[str, Any] | None = None
    disabled: bool | None = None
    before: str | None = None
    after: str | None = None


class PluginRow(msgspec.Struct, frozen=True):
    """One resolved row: plugin `name` mounted as `id` with `config`."""

    id: str
    name: str
    config: Mapping[str, Any] | None = None
    disabled: bool = False
    source: str = DEFAULT_PROFILE


class Profile(msgspec.Struct):
    """The ordered rows after every layer has been applied."""

    rows: list[PluginRow] = msgspec.field(default_factory=list)
    sources: list[str] = msgspec.field(default_factory=list)

    def row(self, id: str) -> PluginRow | None:
        return next((r for r in self.rows if r.id == id), None)

    def with_config(self, id: str, **changes: object) -> Profile:
        """A copy whose row `id` (if present) has `changes` merged into its config."""
        rows = [
            replace(r, config={**(r.config or {}), **changes}) if r.id == id else r
            for r in self.rows
        ]
        return Profile(rows, list(self.sources))

    def layered(self, rows: Sequence[Mapping[str, object]], *, source: str = "<code>") -> Profile:
        """A copy with `rows` applied as one more layer (the rules of a profile file)."""
        layer = _rows(list(rows), source)
        return Profile(apply_layer(self.rows, layer, source), [*self.sources, source])

    def with_files(self, files: Sequence[str | Path]) -> Profile:
        """A copy with each profile file applied as one more layer, in order."""
        rows, sources = list(self.rows), list(self.sources)
        for file in files:
            path = Path(file)
            try:
                text = path.read_text(encoding="utf-8")
            except OSError as exc:
                raise CompositionError(f"{path}: cannot read profile: {exc.strerror}") from None
            rows = apply_layer(rows, parse_layer(text, str(path)), str(path))
            sources.append(str(path))
        return Profile(rows, sources)

    def to_data(self) -> list[dict[str, object]]:
        out: list[dict[str, object]] = []
        for r in self.rows:
            item: dict[str, object] = {"id": r.id, "name": r.name}
            if r.config:
                item["config"] = dict(r.config)
            if r.disabled:
                item["disabled"] = True
            item["from"] = r.source
            out.append(item)
        return out


def default_layer() -> list[dict[str, object]]:
    """The built-in default profile: it boots a working agent with no file at all."""

    return [dict(row) for row in default_rows()]


def parse_layer(text: str, source: str) -> list[_RowData]:
    import yaml

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise CompositionError(f"{source}: invalid YAML: {exc}") from None
    if data is None:
        return []
    if isinstance(data, dict) and "plugins" in data:
        data = data["plugins"]
    if not isinstance(data, list):
        raise CompositionError(f"{source}: expected a list of plugin rows")
    return _rows(data, source)


def _rows(data: Sequence[object], source: str) -> list[_RowData]:
    rows: list[_RowData] = []
    seen: set[str] = set()
    for i, raw in enumerate(data):
        label = f"row {i + 1}"
        if isinstance(raw, dict) and isinstance(raw.get("id"), str):
            label += f' (id "{raw["id"]}")'
        try:
            row = load_config(_RowData, raw)
        except ConfigError as exc:
            problems = exc.lines("", root="row")
            raise CompositionError(f"{source}: {label}: {problems}") from None
        if row.id in seen:
            raise CompositionError(f'{source}: {label}: duplicate id "{row.id}"')
        seen.add(row.id)
        rows.append(row)
    return rows


def apply_layer(rows: list[PluginRow], layer: Sequence[_RowData], source: str) -> list[PluginRow]:
    """Patch `rows` by id: a known id replaces the fields it states (config as a whole);
    a new id is inserted (at the end, or `before` / `after` a named row)."""
    out = list(rows)
    for patch in layer:
        index = next((i for i, r in enumerate(out) if r.id == patch.id), None)
        if index is not None:
            current = out[index]
            changes: dict[str, Any] = {"source": source}
            if patch.name is not None:
                changes["name"] = patch.name
            if patch.config is not None:
                changes["config"] = patch.config
            if patch.disabled is not None:
                changes["disabled"] = patch.disabled
            out[index] = replace(current, **changes)
            continue
        if patch.name is None:
            raise CompositionError(f'{source}: row id "{patch.id}": a new row needs a name')
        row = PluginRow(patch.id, patch.name, patch.config, bool(patch.disabled), source)
        anchor = patch.before or patch.after
        if anchor is None:
            out.append(row)
            continue
        at = next((i for i, r in enumerate(out) if r.id == anchor), None)
        if at is None:
            raise CompositionError(f'{source}: row id "{patch.id}": no row "{anchor}" to place by')
        out.insert(at if patch.before else at + 1, row)
    return out


def load_profile(
    files: Sequence[str | Path] = (),
    *,
    include_default: bool = True,
    base: Sequence[Mapping[str, object]] | None = None,
) -> Profile:
    """Layer the default profile (or `base`), then each file in order."""
    rows: list[PluginRow] = []
    sources: list[str] = []
    first = default_layer() if base is None and include_default else list(base or [])
    if first:
        rows = apply_layer(rows, _rows(first, DEFAULT_PROFILE), DEFAULT_PROFILE)
        sources.append(DEFAULT_PROFILE)
    return Profile(rows, sources).with_files(files)


_VAR = re.compile(r"\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def interpolate(value: object, env: Mapping[str, str], where: str) -> object:
    """Replace `${VAR}` / `${VAR:-default}` in every string of `value` (`$$` is a `$`)."""
    if isinstance(value, str):

        def sub(m: re.Match[str]) -> str:
            if m.group(0) == "$$":
                return "$"
            name, default = m.group(1), m.group(2)
            if name in env and (env[name] or default is None):
                return env[name]
            if default is not None:
                return default
            raise CompositionError(f"{where}: environment variable {name} is not set")

        return _VAR.sub(sub, value)
    if isinstance(value, dict):
        return {k: interpolate(v, env, f"{where}.{k}") for k, v in value.items()}
    if isinstance(value, list):
        return [interpolate(v, env, f"{where}[{i}]") for i, v in enumerate(value)]
    return value


def resolve_plugin(name: str) -> object:
    """Resolve `module:attr`, a plugin of dsh's own (`BUILTIN_PLUGINS`, no metadata read),
    or a name in the `dsh.plugins` entry-point group."""
    if ":" in name:
        module_name, _, attr = name.partition(":")
        try:
            target: object = importlib.import_module(module_name)
        except ImportError as exc:
            raise LookupError(f"cannot import module {module_name!r}: {exc}") from None
        for part in attr.split("."):
            try:
                target = getattr(target, part)
            except AttributeError:
                raise LookupError(f"module {module_name!r} has no attribute {attr!r}") from None
        return target

    if name in BUILTIN_PLUGINS:
        return resolve_plugin(BUILTIN_PLUGINS[name])
    entry = _entry_points().get(name)
    if entry is None:  # installed since the last scan?
        _entry_points.cache_clear()
        entry = _entry_points().get(name)
    if entry is not None:
        return entry.load()
    raise LookupError(f"unknown plugin {name!r} (no {ENTRY_POINT_GROUP} entry point by that name)")


@functools.cache
def _entry_points() -> dict[str, metadata.EntryPoint]:
    """The `dsh.plugins` group by name (the first of a name wins), scanned once: each scan
    reads the metadata of every installed distribution."""
    from importlib import metadata

    found: dict[str, metadata.EntryPoint] = {}
    for entry in metadata.entry_points(group=ENTRY_POINT_GROUP):
        found.setdefault(entry.name, entry)
    return found


class _Prepared(msgspec.Struct, frozen=True):
    row: PluginRow
    plugin: object
    config: object


def prepare(profile: Profile, env: Mapping[str, str] | None = None) -> list[_Prepared]:
    """Resolve every enabled row and validate its config, before anything is loaded."""
    env = os.environ if env is None else env
    prepared: list[_Prepared] = []
    for row in profile.rows:
        if row.disabled:
            continue
        where = f'{row.source}: row id "{row.id}"'
        try:
            plugin = resolve_plugin(row.name)
        except LookupError as exc:
            raise CompositionError(f"{where}: {exc}") from None
        config = interpolate(dict(row.config) if row.config else None, env, f"{where}: config")
        try:
            validated = validate_config(plugin, config, row.id)
        except PluginError as exc:
            raise CompositionError(f"{row.source}: {exc}") from None
        prepared.append(_Prepared(row, plugin, validated))
    return prepared


def boot(
    profile: Profile | None = None,
    *,
    env: Mapping[str, str] | None = None,
    root: Context | None = None,
) -> Acquire[Context]:
    """Load every enabled row of `profile` into `root` (a new root context by default).

    `async with boot() as ctx:` disposes the context when the block ends; `ctx = await
    boot()` leaves that to the caller (`await ctx.owner.dispose()`). All rows are resolved
    and validated first; if any plugin then fails to start, everything loaded so far is
    disposed and `CompositionError` is raised.
    """
    return Acquire(_boot(profile, env, root), _dispose)


async def _boot(
    profile: Profile | None, env: Mapping[str, str] | None, root: Context | None
) -> Context:
    profile = load_profile() if profile is None else profile
    prepared = prepare(profile, env)
    ctx = root or Context()
    boot_ctx = ctx.child("composition")
    try:
        for item in prepared:
            await boot_ctx.plugin(item.plugin, item.config, id=item.row.id)
        await boot_ctx.settled()
        failed = [f for f in boot_ctx.fibers() if f.error is not None]
        if failed:
            raise failed[0].error  # type: ignore[misc]
    except PluginError as exc:
        await boot_ctx.owner.dispose()
        raise CompositionError(f"{_source_of(profile, exc.plugin_id)}: {exc}") from exc
    except BaseException:
        await boot_ctx.owner.dispose()
        raise
    return ctx


async def _dispose(ctx: Context) -> None:
    await ctx.owner.dispose()


def _source_of(profile: Profile, plugin_id: str) -> str:
    row = profile.row(plugin_id)
    return row.source if row is not None else DEFAULT_PROFILE


def with_otel(profile: Profile, *, source: str = "--otel") -> Profile:
    """`profile` with tracing on: its otel row enabled, or `OTEL_ROW` added."""
    if profile.row("otel") is None:
        return profile.layered([OTEL_ROW], source=source)
    return profile.layered([{"id": "otel", "disabled": False}], source=source)
