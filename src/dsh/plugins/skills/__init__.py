"""Skills: folders holding a SKILL.md, listed in the system prompt and loaded on demand by
the `skill` tool."""

from ._catalog import Skill, SkillCatalog, SkillIssue, SkillReader, parse_skill, skill_roots
from ._plugin import (
    SECTION,
    SKILLS,
    VARIABLE,
    SkillError,
    Skills,
    SkillsConfig,
    SkillsPlugin,
    render_catalog,
    skill,
)

__all__ = [
    "SECTION",
    "SKILLS",
    "VARIABLE",
    "Skill",
    "SkillCatalog",
    "SkillError",
    "SkillIssue",
    "SkillReader",
    "Skills",
    "SkillsConfig",
    "SkillsPlugin",
    "parse_skill",
    "render_catalog",
    "skill",
    "skill_roots",
]
