"""`InstructionsPlugin`: AGENTS.md (and CLAUDE.md) files as one system-prompt section."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, ClassVar

from msgspec import Meta

from ..._context import Context
from ...kernel import ConfigRecord, Injects
from ...prompt import SYSTEM_PROMPT, AssembleContext, PinnedText
from ...session import SESSION_DISPOSED, Session
from ...workspace import WorkspaceMemo, agent_cwd, project_folders
from ._files import InstructionFile, InstructionReader, InstructionsText, candidates

__all__ = ["SECTION", "VARIABLE", "InstructionsConfig", "InstructionsPlugin", "instructions_for"]

SECTION = "project:instructions"
ENVIRONMENT = "workspace:environment"
"""Where the agent works: its working directory, the git repository around it, the OS."""
UPDATE = "project:instructions-update"
"""The runtime context that carries the files' new text after an edit mid-session (as the
value of `UPDATE_VARIABLE`, never scanned for placeholders)."""
UPDATE_VARIABLE = "project_instructions_update"
CHANGED = (
    "The project instructions changed during this session. This is their current text; "
    "it replaces the project instructions in the system prompt:"
)
VARIABLE = "project_instructions"
"""The section is the template `{{project_instructions}}`: the files' text arrives as the
variable's value, which the renderer never scans, so a `{{` inside a file stays literal."""


class InstructionsConfig(ConfigRecord):
    claude_compat: bool = True
    """Read `CLAUDE.md` beside each `AGENTS.md`, and `~/.claude/CLAUDE.md`."""
    user_files: bool = True
    """Read the user's own `$DSH_HOME/AGENTS.md` (and `~/.claude/CLAUDE.md`)."""
    max_chars: Annotated[int, Meta(gt=0)] = 32_000
    """The most file text the section holds; past it, files are cut with a note."""
    order: float = 50
    """The section's place: after the persona (0), before tool guidance (100-199)."""
    environment_order: float = 5
    """The environment section's place (right after the persona)."""


def environment_text(cwd: Path) -> str:
    """`## Environment`: the working directory and whether (where) it is in a git
    repository, and the OS. Fixed for a session (its cwd is): no prompt-cache effect."""
    folders = project_folders(cwd)
    root = folders[0] if len(folders) > 1 or (cwd / ".git").exists() else None
    where = f"in the git repository at {root}" if root is not None else "not in a git repository"
    return (
        f"## Environment\n- Working directory: {cwd} ({where}); relative paths start there.\n"
        f"- Operating system: {_SYSTEM}."
    )


_SYSTEM = os.uname().sysname


def instructions_for(
    workspace: Path, config: InstructionsConfig, cache: InstructionReader | None = None
) -> list[InstructionFile]:
    """The instruction files that apply to `workspace`, most general first."""
    found = candidates(workspace, claude_compat=config.claude_compat, user_files=config.user_files)
    return (cache or InstructionReader()).files(found)


class InstructionsPlugin:
    """Adds the `project:instructions` section: the instruction files of the agent's
    workspace, checked at each request and read again when one of them changed."""

    name: ClassVar[str] = "instructions"
    Config = InstructionsConfig
    inject: ClassVar[Injects] = (SYSTEM_PROMPT,)

    @staticmethod
    def apply(ctx: Context, config: InstructionsConfig) -> None:
        section = InstructionsText(
            claude_compat=config.claude_compat,
            user_files=config.user_files,
            max_chars=config.max_chars,
        )

        pins = PinnedText(CHANGED)

        def current(context: AssembleContext) -> tuple[Session | None, str]:
            if context.agent is None:
                return None, ""
            session = getattr(context.agent, "session", None)
            text = section.text(agent_cwd(context.agent))
            return (session if isinstance(session, Session) else None), text

        ctx.system_prompt.variable(VARIABLE, lambda context: pins.section(*current(context)))
        ctx.system_prompt.section(SECTION, config.order, "{{" + VARIABLE + "}}")
        ctx.system_prompt.variable(UPDATE_VARIABLE, lambda c: pins.update(*current(c)))
        ctx.system_prompt.context(UPDATE, config.order, "{{" + UPDATE_VARIABLE + "}}")
        ctx.on(SESSION_DISPOSED, lambda session: pins.forget(session.id))
        # Per workspace, checked at most once per pass of the event loop (not per request).
        places = WorkspaceMemo(environment_text)

        def environment(context: AssembleContext) -> str:
            agent = context.agent
            return "" if agent is None else places.get(agent_cwd(agent))

        ctx.system_prompt.section(ENVIRONMENT, config.environment_order, environment)
