"""Where hooks come from: Claude Code's `hooks` shape, in settings files and the profile row.

```json
{"hooks": {"PreToolUse": [{"matcher": "Bash|Edit",
                           "hooks": [{"type": "command", "command": "…", "timeout": 30}]}]}}
```
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Annotated, Any, Literal, get_args

import msgspec
from msgspec import Meta
from msgspec.structs import replace

from ...kernel import ConfigRecord
from ...workspace import SettingsError, Trust, load_settings

__all__ = [
    "POINTS",
    "HookEntry",
    "HookSet",
    "HooksConfig",
    "Point",
    "SkippedHook",
    "load_hooks",
    "parse_hooks",
]

Point = Literal[
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "Stop",
    "SubagentStop",
    "PreCompact",
    "SessionEnd",
    "Notification",
]
POINTS: tuple[Point, ...] = get_args(Point)
"""The hook points dsh runs, in Claude Code's names."""

_UNMATCHED: frozenset[str] = frozenset({"UserPromptSubmit", "Stop", "SubagentStop"})
"""Points whose `matcher` Claude Code ignores (every hook of the point runs)."""

Scope = Literal["profile", "user", "project", "local"]


class HooksConfig(ConfigRecord):
    """The `hooks` plugin row. `hooks` has the settings files' shape and always runs (it is
    the user's own profile); a workspace's settings files run once it is trusted."""

    hooks: dict[str, Any] = msgspec.field(default_factory=dict)
    settings: bool = True
    """Read the settings files (user, project, local)."""
    claude_compat: bool = True
    """Also read Claude Code's `.claude/` settings files."""
    trust_workspace: bool = False
    """Run the workspace's hooks without a recorded trust (`dsh run --trust-hooks`)."""
    default_timeout_s: Annotated[float, Meta(gt=0)] = 60
    max_output_bytes: Annotated[int, Meta(gt=0)] = 1 << 20
    """Per stream; a hook that writes more is stopped (a non-blocking error)."""
    max_context_chars: Annotated[int, Meta(gt=0)] = 10_000
    """How much of one hook's context reaches the model."""
    stderr_summary_chars: Annotated[int, Meta(gt=0)] = 500
    idle_notification_s: Annotated[float, Meta(ge=0)] = 60
    """How long an agent is idle before `Notification` (`idle_prompt`) runs."""

    def __post_init__(self) -> None:
        try:  # a malformed `hooks` value stops the profile, not the first hook it would run
            parse_hooks(self.hooks, "hooks", None, "profile", True)
        except SettingsError as exc:
            raise ValueError(str(exc)) from None


class HookEntry(msgspec.Struct, frozen=True):
    """One command hook as configured. `timeout_s` None takes the plugin's default."""

    point: Point
    matcher: str | None
    command: str
    timeout_s: float | None
    source: Path | None
    """The settings file, or None for the profile row."""
    scope: Scope
    trusted: bool
    ordinal: int = 0
    """Its place among the point's hooks (1-based), for `handler_id`."""
    pattern: re.Pattern[str] | None = msgspec.field(default=None)

    @property
    def handler_id(self) -> str:
        return f"claude-code:{self.point}:{self.ordinal}"

    def matches(self, names: tuple[str, ...]) -> bool:
        """A case-insensitive full match of the matcher against any of `names`; no matcher
        (or `*`, or a point that ignores matchers) matches everything."""
        return self.pattern is None or any(self.pattern.fullmatch(n) for n in names)


class SkippedHook(msgspec.Struct, frozen=True):
    """Something in a `hooks` value dsh does not run, and why (shown by `dsh hooks list`)."""

    point: str
    source: Path | None
    why: str


class HookSet(msgspec.Struct, frozen=True):
    """The hooks of one workspace: every configured entry (trusted or not) in layer order."""

    workspace: Path
    entries: tuple[HookEntry, ...] = ()
    skipped: tuple[SkippedHook, ...] = ()

    def matching(self, point: Point, names: tuple[str, ...] = ()) -> tuple[HookEntry, ...]:
        """The trusted hooks of `point` matching `names`, one per distinct command."""
        seen: set[str] = set()
        found: list[HookEntry] = []
        for entry in self.entries:
            if entry.point != point or not entry.trusted or entry.command in seen:
                continue
            if not names or entry.matches(names):
                seen.add(entry.command)
                found.append(entry)
        return tuple(found)

    @property
    def untrusted(self) -> tuple[HookEntry, ...]:
        return tuple(e for e in self.entries if not e.trusted)


def load_hooks(
    workspace: Path, config: HooksConfig | None = None, *, trust: Trust | None = None
) -> HookSet:
    """The hooks for `workspace`: the profile row's, then each settings file's (user,
    project, local). A malformed file or `hooks` value raises `SettingsError` naming it."""
    config = HooksConfig() if config is None else config
    layers: list[tuple[Any, Path | None, Scope, bool]] = [(config.hooks, None, "profile", True)]
    if config.settings:
        settings = load_settings(workspace, claude_compat=config.claude_compat, trust=trust)
        for layer in settings.layers:
            if "hooks" in layer.data:
                trusted = layer.trusted or config.trust_workspace
                layers.append((layer.data["hooks"], layer.source.path, layer.source.scope, trusted))
    entries: list[HookEntry] = []
    skipped: list[SkippedHook] = []
    counts: dict[str, int] = {}
    for value, source, scope, trusted in layers:
        where = "hooks" if source is None else f"{source}: hooks"
        for item in parse_hooks(value, where, source, scope, trusted):
            if isinstance(item, SkippedHook):
                skipped.append(item)
            else:
                counts[item.point] = counts.get(item.point, 0) + 1
                entries.append(replace(item, ordinal=counts[item.point]))
    return HookSet(workspace, tuple(entries), tuple(skipped))


def parse_hooks(
    value: object, where: str, source: Path | None, scope: Scope, trusted: bool
) -> list[HookEntry | SkippedHook]:
    """The entries of one `hooks` value; a malformed one raises `SettingsError` with the
    path of the bad key (`<file>: hooks.PreToolUse[0].matcher: …`)."""
    return list(_entries(value, where, source, scope, trusted))


def _entries(
    value: object, where: str, source: Path | None, scope: Scope, trusted: bool
) -> Iterator[HookEntry | SkippedHook]:
    for point, groups in _object(value, where).items():
        at = f"{where}.{point}"
        if point not in POINTS:
            _list(groups, at)
            yield SkippedHook(point, source, f"{point} is not a hook point dsh runs")
            continue
        for i, group in enumerate(_list(groups, at)):
            group_at = f"{at}[{i}]"
            group = _object(group, group_at)
            matcher = _matcher(group.get("matcher"), f"{group_at}.matcher")
            pattern = (
                None if point in _UNMATCHED or matcher is None else _compile(matcher, group_at)
            )
            for j, hook in enumerate(_list(group.get("hooks", []), f"{group_at}.hooks")):
                hook_at = f"{group_at}.hooks[{j}]"
                hook = _object(hook, hook_at)
                kind = hook.get("type", "command")
                if kind != "command":
                    yield SkippedHook(point, source, f"type {kind!r} hooks are not run by dsh")
                    continue
                yield HookEntry(
                    point,
                    matcher,
                    _command(hook.get("command"), f"{hook_at}.command"),
                    _timeout(hook.get("timeout"), f"{hook_at}.timeout"),
                    source,
                    scope,
                    trusted,
                    pattern=pattern,
                )


def _object(value: object, at: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise SettingsError(f"{at}: expected an object, found {_kind(value)}")
    return value


def _list(value: object, at: str) -> list[Any]:
    if not isinstance(value, list):
        raise SettingsError(f"{at}: expected a list, found {_kind(value)}")
    return value


def _matcher(value: object, at: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise SettingsError(f"{at}: expected a string, found {_kind(value)}")
    return None if value.strip() in ("", "*") else value


def _compile(matcher: str, at: str) -> re.Pattern[str]:
    try:
        return re.compile(matcher, re.IGNORECASE)
    except re.error as exc:
        raise SettingsError(
            f"{at}.matcher: {matcher!r} is not a valid regular expression ({exc})"
        ) from None


def _command(value: object, at: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise SettingsError(f"{at}: expected a non-empty command string, found {_kind(value)}")
    return value


def _timeout(value: object, at: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise SettingsError(f"{at}: expected a positive number of seconds, found {value!r}")
    return float(value)


def _kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, str):
        return f"the string {value!r}" if len(value) < 40 else "a string"
    return {dict: "an object", list: "a list", bool: "a boolean"}.get(
        type(value), type(value).__name__
    )
