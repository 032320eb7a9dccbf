"""The Agent Card: who this dsh is, what it can do (its workspace's skills), where and how
to reach it."""

from __future__ import annotations

from pathlib import Path

from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    HTTPAuthSecurityScheme,
    SecurityRequirement,
    SecurityScheme,
    StringList,
)
from a2a.utils.constants import PROTOCOL_VERSION_0_3, PROTOCOL_VERSION_1_0, TransportProtocol

from .._context import Context
from .._version import __version__
from ..plugins.skills import SKILLS

__all__ = ["BEARER", "agent_card"]

BEARER = "bearer"
"""The card's name for the token scheme."""


def agent_card(ctx: Context, workspace: Path, url: str) -> AgentCard:
    """The card of the agent served at `url` (the JSON-RPC endpoint) for `workspace`: one
    skill for the work itself, and one per skill of the workspace's catalog."""
    interfaces = [
        AgentInterface(
            url=url, protocol_binding=TransportProtocol.JSONRPC.value, protocol_version=version
        )
        for version in (PROTOCOL_VERSION_1_0, PROTOCOL_VERSION_0_3)
    ]
    scheme = SecurityScheme(
        http_auth_security_scheme=HTTPAuthSecurityScheme(
            scheme="Bearer", description="the token `dsh a2a` or `dsh web` was given or printed"
        )
    )
    return AgentCard(
        name=f"dsh ({workspace.name or workspace})",
        description=(
            f"A coding agent working in {workspace.name or workspace}: it reads, searches and "
            "edits files and runs commands there. One context is one dsh session."
        ),
        version=__version__,
        supported_interfaces=interfaces,
        capabilities=AgentCapabilities(streaming=True, push_notifications=False),
        security_schemes={BEARER: scheme},
        security_requirements=[SecurityRequirement(schemes={BEARER: StringList()})],
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain", "application/json"],
        skills=[_work_skill(), *_workspace_skills(ctx, workspace)],
    )


def _work_skill() -> AgentSkill:
    return AgentSkill(
        id="code",
        name="Work in the workspace",
        description="Answer questions about the code, change files, run commands and tests.",
        tags=["code", "files", "shell"],
        examples=["Add a test for the parser and run it."],
    )


def _workspace_skills(ctx: Context, workspace: Path) -> list[AgentSkill]:
    skills = ctx.get(SKILLS)
    if skills is None:
        return []
    return [
        AgentSkill(id=s.name, name=s.name, description=s.description, tags=["skill"])
        for s in skills.catalog(workspace).skills
    ]
