"""Skills on disk: folders holding a `SKILL.md` whose YAML front matter names and describes
them. Parsed files are kept until they change."""

from __future__ import annotations

import functools
import os
import re
from pathlib import Path
from typing import Literal

import msgspec

from ...workspace import MEMO_WORKSPACES, FileCache, Stamp, dsh_home, file_stamp, project_folders

__all__ = ["Skill", "SkillCatalog", "SkillIssue", "SkillReader", "parse_skill", "skill_roots"]

Scope = Literal["project", "user"]
NAME = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*\Z")
MAX_NAME = 64
MAX_DESCRIPTION = 1024
SKILL_FILE = "SKILL.md"


class Skill(msgspec.Struct, frozen=True):
    name: str
    description: str
    folder: Path
    scope: Scope
    body: str
    """The instructions: SKILL.md after its front matter."""


class SkillIssue(msgspec.Struct, frozen=True):
    """A SKILL.md that was skipped, and why (one line)."""

    path: Path
    problem: str

    def __str__(self) -> str:
        return f"{self.path}: {self.problem}; the skill is skipped"


class SkillCatalog(msgspec.Struct, frozen=True):
    """The skills of one workspace: nearest definition of a name first, shadowed ones out."""

    skills: tuple[Skill, ...] = ()
    issues: tuple[SkillIssue, ...] = ()

    def get(self, name: str) -> Skill | None:
        return next((s for s in self.skills if s.name == name), None)


def skill_roots(
    workspace: Path, *, claude_compat: bool, home: Path | None = None
) -> list[tuple[Path, Scope]]:
    """Where skills live, first wins: each folder from the workspace up to the repository
    root (`.dsh/skills`, then `.claude/skills`), then `$DSH_HOME/skills`, `~/.claude/skills`."""
    names = (".dsh", ".claude") if claude_compat else (".dsh",)
    roots: list[tuple[Path, Scope]] = [
        (folder / name / "skills", "project")
        for folder in reversed(project_folders(workspace))
        for name in names
    ]
    roots.append(((dsh_home() if home is None else home) / "skills", "user"))
    if claude_compat:
        roots.append((Path.home() / ".claude" / "skills", "user"))
    return roots


class SkillReader:
    """Reads the skills of workspaces; a SKILL.md is parsed again only when it changed, and a
    catalog is made again only when its roots' folders or a SKILL.md's stamp did."""

    __slots__ = ("_cache", "_catalogs")

    def __init__(self) -> None:
        self._cache: FileCache[Skill | SkillIssue] = FileCache()
        self._catalogs: dict[tuple[tuple[Path, Scope], ...], _Read] = {}
        """The last catalog made of each list of roots (one per workspace)."""

    def catalog(self, roots: list[tuple[Path, Scope]]) -> SkillCatalog:
        stamps = [
            (path, scope, file_stamp(path)) for root, scope in roots for path in _skill_files(root)
        ]
        key = tuple(roots)
        last = self._catalogs.get(key)
        if last is None or stamps != last.stamps:
            if len(self._catalogs) >= MEMO_WORKSPACES:
                self._catalogs.clear()
            last = self._catalogs[key] = _Read(stamps, self._read(stamps))
        return last.catalog

    def _read(self, stamps: list[tuple[str, Scope, Stamp | None]]) -> SkillCatalog:
        skills: dict[str, Skill] = {}
        issues: list[SkillIssue] = []
        for path, scope, _ in stamps:
            found = self._cache.get(Path(path), functools.partial(parse_skill, scope=scope))
            if isinstance(found, SkillIssue):
                issues.append(found)
            elif found is not None and found.name not in skills:
                skills[found.name] = found
        return SkillCatalog(tuple(skills.values()), tuple(issues))


class _Read(msgspec.Struct, frozen=True):
    stamps: list[tuple[str, Scope, Stamp | None]]
    catalog: SkillCatalog


def _skill_files(root: Path) -> list[str]:
    """`<root>/<folder>/SKILL.md` for each folder that is not hidden, in name order."""
    try:
        entries = sorted(os.scandir(root), key=lambda e: e.name)
    except OSError:
        return []
    return [
        os.path.join(e.path, SKILL_FILE)
        for e in entries
        if e.is_dir() and not e.name.startswith(".")
    ]


def parse_skill(path: Path, scope: Scope) -> Skill | SkillIssue:
    """One SKILL.md: `---`, YAML with `name` and `description`, `---`, then the body."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return SkillIssue(path, f"cannot read ({exc})")
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        return SkillIssue(path, "no front matter (the file must start with a '---' line)")
    end = next((i for i in range(1, len(lines)) if lines[i].strip() == "---"), None)
    if end is None:
        return SkillIssue(path, "the front matter has no closing '---' line")
    import yaml  # here, not at import: booting with no skill on disk never needs it

    try:
        meta = yaml.safe_load("".join(lines[1:end]))
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        line = f" at line {where.line + 2}" if where is not None else ""
        return SkillIssue(path, f"invalid YAML in the front matter{line}")
    problem = _front_matter_problem(meta)
    if problem is not None:
        return SkillIssue(path, problem)
    body = "".join(lines[end + 1 :]).strip()
    return Skill(meta["name"], " ".join(meta["description"].split()), path.parent, scope, body)


def _front_matter_problem(meta: object) -> str | None:
    if not isinstance(meta, dict):
        return "the front matter is not a YAML mapping"
    name, description = meta.get("name"), meta.get("description")
    if not isinstance(name, str) or not name:
        return "the front matter has no 'name'"
    if len(name) > MAX_NAME or NAME.match(name) is None:
        return (
            f"name {name!r} must be lowercase letters, digits and hyphens "
            f"(at most {MAX_NAME} characters)"
        )
    if not isinstance(description, str) or not description.strip():
        return "the front matter has no 'description'"
    if len(description) > MAX_DESCRIPTION:
        return f"the description is longer than {MAX_DESCRIPTION} characters"
    return None
