"""How `dsh-jsonrpc-agent` is launched: the reference SDK's flags and the profile they compose.

The official SDK (0.2.1) starts its runtime as `<bin> --profile NAME [--patch FILE]...` with
`DSH_HOME` set. Here `--profile NAME` layers our own profile file of that name
(`$DSH_HOME/profiles/NAME/dsh.yml`, when present) and makes new session logs format 4, which
the reference runtime sharing that home resumes; `--patch FILE` applies the reference's patch
rows that we know (rows of our own plugins, and its JSONL persistence row) and reports the
others on stderr.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import msgspec

from ..profiles import Profile, load_profile
from ..workspace import dsh_home

__all__ = ["PROFILE_ENV", "Launch", "LaunchError", "compose", "parse_args", "profile_files"]

PROFILE_ENV = "DSH_PROFILE"
"""Profile files layered over the default profile, separated by the OS path separator."""

PROFILE_FILE = "dsh.yml"
"""Our profile file in `$DSH_HOME/profiles/<name>/` (the reference keeps its `cordis.yml`
files beside it)."""

USAGE = "usage: dsh-jsonrpc-agent [--profile NAME] [--patch FILE]..."

_ROW_KEYS = frozenset({"id", "name", "config", "disabled", "before", "after"})
_REFERENCE_JSONL = "session-persistence-jsonl"
_JSONL_KEYS = frozenset({"root", "compression"})
"""The reference JSONL row's keys we take as they are (`writeBatchMaxDelayMs` is our
`batch_window_ms`; `packChunks` and the cache sizes have no counterpart)."""


class LaunchError(Exception):
    """Bad arguments or an unusable patch file: one line, exit status 2."""


class Launch(msgspec.Struct, frozen=True):
    profile: str | None = None
    patches: tuple[Path, ...] = msgspec.field(default_factory=tuple)


def profile_files() -> list[Path]:
    raw = os.environ.get(PROFILE_ENV, "")
    return [Path(p) for p in raw.split(os.pathsep) if p]


def parse_args(argv: Sequence[str]) -> Launch:
    """`--profile NAME` (or `--profile=NAME`) and any number of `--patch FILE`."""
    profile: str | None = None
    patches: list[Path] = []
    args = list(argv)
    while args:
        arg = args.pop(0)
        flag, eq, value = arg.partition("=")
        if flag not in ("--profile", "--patch"):
            raise LaunchError(f"unknown argument {arg!r} ({USAGE})")
        if not eq:
            if not args:
                raise LaunchError(f"{flag} needs a value ({USAGE})")
            value = args.pop(0)
        if not value:
            raise LaunchError(f"{flag} needs a value ({USAGE})")
        if flag == "--profile":
            if "/" in value or value in (".", ".."):
                raise LaunchError(f"--profile takes a profile name, not a path: {value!r}")
            profile = value
        else:
            patches.append(Path(value))
    return Launch(profile, tuple(patches))


def compose(launch: Launch, report: Callable[[str], None]) -> Profile:
    """The default profile, then (with `--profile`) format-4 logs and our profile file of
    that name, then `DSH_PROFILE`, then each patch; `report` gets one line per skipped row."""
    files: list[Path] = []
    if launch.profile is not None:
        named = dsh_home() / "profiles" / launch.profile / PROFILE_FILE
        if named.is_file():
            files.append(named)
    profile = load_profile([*files, *profile_files()])
    persistence = profile.row("persistence")
    # Launched by the reference's SDK: its runtime shares the home, so its log format (unless
    # a profile file chose one).
    chosen = persistence is None or "format" in (persistence.config or {})
    if launch.profile is not None and not chosen:
        profile = profile.with_config("persistence", format="v4")
    for patch in launch.patches:
        rows = patch_rows(patch, profile, report)
        profile = profile.layered(rows, source=str(patch))
    return profile


def patch_rows(
    path: Path, profile: Profile, report: Callable[[str], None]
) -> list[dict[str, object]]:
    """The rows of a reference patch file that apply here."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise LaunchError(f"--patch {path}: cannot read: {exc.strerror}") from None
    data = _load_yaml(text, path)
    if data is None:
        return []
    if not isinstance(data, list):
        raise LaunchError(f"--patch {path}: expected a list of patch rows")
    rows: list[dict[str, object]] = []
    for index, raw in enumerate(data, 1):
        row, note = _row(raw, profile)
        if row is not None:
            rows.append(row)
        ident = raw.get("id") if isinstance(raw, Mapping) else None
        label = f'row "{ident}"' if isinstance(ident, str) else f"row {index}"
        if note:
            report(f"dsh-jsonrpc-agent: --patch {path}: {label} {note}")
    return rows


def _row(raw: object, profile: Profile) -> tuple[dict[str, object] | None, str]:
    """The row to layer (None: skipped), and what to report about it ("" for nothing)."""
    if not isinstance(raw, Mapping) or not isinstance(raw.get("id"), str):
        return None, "skipped: not a row with an id"
    if _has_js(raw):
        return None, "skipped: it holds a !!js expression"
    if raw["id"] == _REFERENCE_JSONL and profile.row("persistence") is not None:
        return _persistence_row(raw)
    if profile.row(raw["id"]) is None:
        return None, "skipped: no plugin with this id here"
    unknown = sorted(set(raw) - _ROW_KEYS)
    if unknown:
        return None, f"skipped: unknown keys {', '.join(unknown)}"
    return dict(raw), ""


def _persistence_row(raw: Mapping[str, Any]) -> tuple[dict[str, Any] | None, str]:
    """The reference's JSONL persistence row as ours (its logs are format 4)."""
    config = raw.get("config") or {}
    if not isinstance(config, Mapping):
        return None, "skipped: config is not a mapping"
    ours: dict[str, Any] = {"format": "v4"}
    ignored: list[str] = []
    for key, value in config.items():
        if key == "writeBatchMaxDelayMs":
            ours["batch_window_ms"] = value
        elif key in _JSONL_KEYS:
            ours[key] = value
        else:
            ignored.append(str(key))
    row: dict[str, Any] = {"id": "persistence", "config": ours}
    if isinstance(raw.get("disabled"), bool):
        row["disabled"] = raw["disabled"]
    note = f"applied to persistence; ignored: {', '.join(ignored)}" if ignored else ""
    return row, note


class _Expression:
    """A `!!js` value: the reference evaluates it; we cannot."""


def _load_yaml(text: str, path: Path) -> Any:
    import yaml

    class Loader(yaml.SafeLoader):
        pass

    def expression(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> _Expression:
        return _Expression()

    Loader.add_multi_constructor("tag:yaml.org,2002:js", expression)
    Loader.add_multi_constructor("!js", expression)
    try:
        return yaml.load(text, Loader=Loader)  # a SafeLoader that also reads !!js tags
    except yaml.YAMLError as exc:
        raise LaunchError(f"--patch {path}: invalid YAML: {_first_line(exc)}") from None


def _has_js(value: object) -> bool:
    if isinstance(value, _Expression):
        return True
    if isinstance(value, Mapping):
        return any(_has_js(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_js(v) for v in value)
    return False


def _first_line(exc: Exception) -> str:
    return " ".join(str(exc).split())
