"""`SkillsPlugin`: the skills catalog in the system prompt and the `skill` tool."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import ClassVar

from ..._context import Context
from ...agent import Agent
from ...kernel import ConfigRecord, Injects, ServiceKey
from ...llm import HarnessError
from ...prompt import SYSTEM_PROMPT, AssembleContext, PinnedText
from ...session import SESSION_DISPOSED, Session
from ...tools import TOOLS, ToolPlugin, ToolRunContext, offer_when, tool
from ...workspace import PassMemo, WorkspaceMemo, agent_cwd, agent_workspace
from ._catalog import Skill, SkillCatalog, SkillIssue, SkillReader, skill_roots

__all__ = ["SECTION", "SKILLS", "VARIABLE", "SkillError", "Skills", "SkillsConfig", "SkillsPlugin"]

_log = logging.getLogger("dsh.plugins.skills")

SECTION = "skills:catalog"
VARIABLE = "skills_catalog"
"""The catalog reaches its section as this variable's value: descriptions are never templates."""
UPDATE = "skills:catalog-update"
UPDATE_VARIABLE = "skills_catalog_update"
"""The runtime context (and its variable) that carries the catalog after a change mid-session."""
CHANGED = (
    "The skills available changed during this session. This is the current catalog; it "
    "replaces the Skills section of the system prompt:"
)
MAX_FILES = 200
"""Files listed when a skill is loaded."""
MAX_FILE_BYTES = 256 * 1024
"""The largest skill file the tool reads."""

CATALOG_HEADER = (
    "## Skills\n\n"
    "A skill is a folder of instructions, sometimes with scripts or reference files, for one "
    "kind of task. When a task matches a skill's description, load the skill with the skill "
    "tool before you start, and follow it."
)


class SkillError(HarnessError):
    def __init__(self, message: str) -> None:
        super().__init__(message, "SKILL")


class SkillsConfig(ConfigRecord):
    claude_compat: bool = True
    """Read `.claude/skills` folders too (a project's and `~/.claude/skills`)."""
    order: float = 110
    """The catalog section's place (the tool guidance band)."""


class Skills:
    """The skills service (`ctx.get(SKILLS)`): the catalog of a workspace, read from disk
    (files parsed again only when they change; the roots listed at most once per pass of the
    event loop for a workspace, however many sessions ask); each bad SKILL.md is reported
    once."""

    def __init__(self, config: SkillsConfig) -> None:
        self.config = config
        self._reader = SkillReader()
        self._reported: set[SkillIssue] = set()
        self._roots = WorkspaceMemo(
            lambda workspace: skill_roots(workspace, claude_compat=config.claude_compat)
        )
        self._catalogs: PassMemo[str, SkillCatalog] = PassMemo(
            lambda workspace: self._reader.catalog(self._roots.get(workspace))
        )

    def catalog(self, workspace: Path | str) -> SkillCatalog:
        catalog = self._catalogs.get(str(workspace))
        for issue in catalog.issues:
            if issue not in self._reported:
                self._reported.add(issue)
                _log.warning("%s", issue)
        return catalog


def render_catalog(catalog: SkillCatalog) -> str:
    """The catalog section: a header and one `- name: description` line per skill."""
    if not catalog.skills:
        return ""
    lines = [f"- {s.name}: {s.description}" for s in catalog.skills]
    return CATALOG_HEADER + "\n\n" + "\n".join(lines)


def render_skill(skill: Skill) -> str:
    """What loading a skill gives the model: its instructions and the files it holds."""
    text = f'<skill name="{skill.name}" folder="{skill.folder}">\n{skill.body}\n</skill>'
    files = skill_files(skill.folder)
    if files:
        how = f'skill {{"name": "{skill.name}", "file": "<path>"}}'
        text += f"\nFiles in this skill (read one with {how}): " + ", ".join(files)
    return text


def skill_files(folder: Path) -> list[str]:
    """The skill's files (not SKILL.md, nothing hidden), relative, sorted, at most MAX_FILES."""
    found: list[str] = []
    for parent, folders, names in os.walk(folder):
        folders[:] = sorted(f for f in folders if not f.startswith("."))
        base = Path(parent).relative_to(folder)
        found.extend((base / n).as_posix() for n in sorted(names) if not n.startswith("."))
    found = [f for f in found if f != "SKILL.md"]
    if len(found) > MAX_FILES:
        return [*found[:MAX_FILES], f"… and {len(found) - MAX_FILES} more"]
    return found


def read_skill_file(skill: Skill, file: str) -> str:
    """A file inside the skill's folder, as text."""
    base = skill.folder.resolve()
    target = (base / file).resolve()
    if not target.is_relative_to(base):
        raise SkillError(f'"{file}" is outside the folder of skill "{skill.name}"')
    if not target.is_file():
        raise SkillError(f'skill "{skill.name}" has no file "{file}"')
    if target.stat().st_size > MAX_FILE_BYTES:
        raise SkillError(f'"{file}" is larger than {MAX_FILE_BYTES} bytes; read it in parts')
    try:
        return target.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise SkillError(f'"{file}" is not a text file') from None


@tool(concurrency_safe=True)
async def skill(name: str, file: str = "", *, run: ToolRunContext) -> str:
    """Load a skill from the Skills section: its instructions and the list of its files.
    Pass `file` to read one of those files instead.

    Args:
        name: The skill's name, as listed in the Skills section.
        file: A file of the skill to read, relative to the skill's folder.
    """
    agent = run.agent
    if not isinstance(agent, Agent):
        raise SkillError("the skill tool needs a calling agent")
    catalog = agent.ctx.require(SKILLS).catalog(agent_workspace(agent))
    found = catalog.get(name)
    if found is None:
        names = ", ".join(s.name for s in catalog.skills) or "none"
        raise SkillError(f'unknown skill "{name}" (available: {names})')
    return read_skill_file(found, file) if file else render_skill(found)


class SkillsPlugin:
    """Provides `Skills`, the `skills:catalog` section of the agent's workspace, and the
    `skill` tool."""

    name: ClassVar[str] = "skills"
    Config = SkillsConfig
    inject: ClassVar[Injects] = (SYSTEM_PROMPT, TOOLS)

    @staticmethod
    async def apply(ctx: Context, config: SkillsConfig) -> None:
        service = Skills(config)
        ctx.provide(SKILLS, service)

        pins = PinnedText(CHANGED)

        def catalog(context: AssembleContext) -> tuple[Session | None, str]:
            if context.agent is None:
                return None, ""
            session = getattr(context.agent, "session", None)
            text = render_catalog(service.catalog(agent_cwd(context.agent)))
            return (session if isinstance(session, Session) else None), text

        ctx.system_prompt.variable(VARIABLE, lambda c: pins.section(*catalog(c)))
        ctx.system_prompt.variable(UPDATE_VARIABLE, lambda c: pins.update(*catalog(c)))
        ctx.system_prompt.context(UPDATE, config.order, "{{" + UPDATE_VARIABLE + "}}")
        ctx.on(SESSION_DISPOSED, lambda session: pins.forget(session.id))
        offer_when(ctx, skill.name, lambda agent: bool(service.catalog(agent_cwd(agent)).skills))
        guidance = (config.order, "{{" + VARIABLE + "}}")
        tools = ToolPlugin("skills:tool", [skill], guidance=guidance, section=SECTION)
        await ctx.plugin(tools, id="skills:tool")


SKILLS: ServiceKey[Skills] = ServiceKey("skills")
