"""`permissions` from settings files, in Claude Code's shape: `{"allow": [...], "ask": [...],
"deny": [...]}` of rules `Tool` or `Tool(specifier)`, read per workspace through
`dsh.workspace` (so a repository's own files count only once it is trusted), and the rule
"always for this project" writes to `<workspace>/.dsh/settings.local.json`."""

from __future__ import annotations

import fnmatch
import json
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import msgspec

from ...llm import Json
from ...tools import Allow, Ask, Deny, PreDecision
from ...workspace import SettingsError, Trust, edit_json_file, load_settings, settings_sources

__all__ = ["PermissionRule", "ProjectPermissions", "project_rule"]

Kind = Literal["allow", "ask", "deny"]
KINDS: tuple[Kind, ...] = ("deny", "ask", "allow")
"""Strongest first: a deny anywhere wins, then an ask, then an allow."""

CLAUDE_NAMES = {"Bash": "bash", "Edit": "edit", "Write": "write", "Read": "read"}
CLAUDE_NAMES |= {"Glob": "glob", "Grep": "grep", "MultiEdit": "edit"}
OUR_NAMES = {ours: theirs for theirs, ours in CLAUDE_NAMES.items() if theirs != "MultiEdit"}
FILE_TOOLS = ("edit", "write", "read")
LOCAL_FILE = Path(".dsh") / "settings.local.json"
RECHECK_S = 0.5
"""How long the files' modification times are trusted before they are looked at again
(a stat of each settings file per tool call would cost tens of µs)."""


class PermissionRule(msgspec.Struct, frozen=True):
    """`bash`, `bash(git status)`, `bash(npm run test:*)` (a command prefix), `edit(src/**)`
    (a path pattern, relative to the workspace)."""

    kind: Kind
    tool: str
    specifier: str | None
    text: str
    source: str

    @staticmethod
    def parse(kind: Kind, text: str, source: str) -> PermissionRule:
        name, paren, rest = text.strip().partition("(")
        specifier = rest[:-1] if paren and rest.endswith(")") else None
        tool = CLAUDE_NAMES.get(name.strip(), name.strip())
        return PermissionRule(kind, tool, specifier, text, source)

    def matches(self, tool: str, args: Mapping[str, Json], workspace: Path) -> bool:
        if tool != self.tool:
            return False
        if self.specifier is None or self.specifier in ("", "*"):
            return True
        if tool == "bash":
            command = str(args.get("command", "")).strip()
            if self.specifier.endswith(":*"):
                return command.startswith(self.specifier[:-2])
            return command == self.specifier.strip()
        if tool in FILE_TOOLS and isinstance(args.get("file_path"), str):
            path = Path(str(args["file_path"]))
            target = path if path.is_absolute() else workspace / path
            relative = os.path.relpath(os.path.normpath(target), workspace)
            return fnmatch.fnmatchcase(relative, self.specifier.removeprefix("./"))
        return False  # a specifier this tool has no meaning for matches nothing


def project_rule(tool: str, args: Mapping[str, Json]) -> str:
    """What "always for this project" saves: the exact command for `bash` (not every
    command), the whole tool otherwise (file tools stay inside the workspace anyway)."""
    name = OUR_NAMES.get(tool, tool)
    if tool == "bash" and isinstance(args.get("command"), str):
        return f"{name}({str(args['command']).strip()})"
    return name


class ProjectPermissions:
    """The `permissions` in effect for each workspace, re-read when a settings file or the
    trust file changes (noticed within `RECHECK_S`; at once for `allow_in_project`)."""

    def __init__(self) -> None:
        self._cache: dict[tuple[str | None, ...], _Cached] = {}

    def rules(self, workspace: Path | str) -> tuple[PermissionRule, ...]:
        key = (str(workspace), os.environ.get("HOME"), os.environ.get("DSH_HOME"))
        cached = self._cache.get(key)
        if cached is None:
            sources = settings_sources(Path(workspace))
            files = [str(s.path) for s in sources] + [str(Trust().path)]
            cached = self._cache[key] = _Cached(tuple(files))
        now = time.monotonic()
        if now - cached.checked_at < RECHECK_S:
            return cached.rules
        cached.checked_at = now
        stamp = tuple(_mtime(f) for f in cached.files)
        if stamp != cached.stamp:
            cached.stamp, cached.rules = stamp, _read_rules(Path(workspace))
        return cached.rules

    def decide(self, tool: str, args: Json, workspace: Path | str) -> PreDecision | None:
        """What the settings say about this call (None: nothing). A workspace given as text
        becomes a `Path` only when a rule is there to match."""
        rules = self.rules(workspace)
        if not rules:
            return None
        values = _as_mapping(args)
        folder = Path(workspace)
        for kind in KINDS:
            for rule in rules:
                if rule.kind == kind and rule.matches(tool, values, folder):
                    return _decision(rule)
        return None

    def allow_in_project(self, workspace: Path, tool: str, args: Json) -> tuple[str, Path]:
        """Save "always allow" for this kind of call in the workspace's local settings
        (the user's own file, next to Claude Code's `.claude/settings.local.json`)."""
        rule = project_rule(tool, _as_mapping(args))
        path = workspace / LOCAL_FILE

        def add(data: dict[str, Any]) -> None:
            permissions = data.setdefault("permissions", {})
            allow = permissions.setdefault("allow", [])
            if rule not in allow:
                allow.append(rule)

        edit_json_file(path, add)
        self.reload()
        return rule, path

    def reload(self) -> None:
        """Read the files again at the next call (after changing them, or the trust)."""
        self._cache.clear()


def _decision(rule: PermissionRule) -> PreDecision:
    why = f'{rule.kind} rule "{rule.text}" in {rule.source}'
    if rule.kind == "allow":
        return Allow()
    if rule.kind == "ask":
        return Ask(f"settings: {why}")
    return Deny(f'tool "{rule.tool}" is denied by the {why}')


def _read_rules(workspace: Path) -> tuple[PermissionRule, ...]:
    try:
        settings = load_settings(workspace)
    except SettingsError:
        return ()  # a broken file is reported where settings are shown, never guessed at
    found: list[PermissionRule] = []
    for source, permissions in settings.values("permissions"):
        if not isinstance(permissions, dict):
            continue
        for kind in KINDS:
            entries = permissions.get(kind)
            if isinstance(entries, list):
                found += [
                    PermissionRule.parse(kind, e, str(source.path))
                    for e in entries
                    if isinstance(e, str)
                ]
    return tuple(found)


class _Cached(msgspec.Struct):
    files: tuple[str, ...]
    """The settings files of a workspace, and the trust file."""
    stamp: tuple[int, ...] = ()
    rules: tuple[PermissionRule, ...] = ()
    checked_at: float = -RECHECK_S


def _mtime(path: str) -> int:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return 0


def _as_mapping(args: Json) -> Mapping[str, Json]:
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except ValueError:
            return {}
    return args if isinstance(args, Mapping) else {}
