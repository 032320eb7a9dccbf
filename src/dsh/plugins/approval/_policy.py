"""The approval policy: ordered `{tool, action}` rules over tool-name patterns."""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict

from ...tools import Allow, Ask, Deny, PreDecision

__all__ = ["DEFAULT_POLICY", "Action", "ApprovalConfig", "Rule", "decide"]

Action = Literal["allow", "ask", "deny"]


class Rule(BaseModel):
    """`tool` is an `fnmatch` pattern over tool names (`*`, `?`, `[…]`, case-sensitive)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tool: str
    action: Action


DEFAULT_POLICY: tuple[Rule, ...] = (
    *(Rule(tool=name, action="allow") for name in ("read", "glob", "grep", "todo_write")),
    *(Rule(tool=name, action="ask") for name in ("write", "edit", "bash")),
)
"""Reads, searches and the todo list run; changes to files and commands ask."""


class ApprovalConfig(BaseModel):
    """`policy` is checked first, then `default_policy`; the first matching rule decides,
    and `unmatched` decides for a tool no rule names. `auto_approve` answers `once` to every
    ask when no answerer is registered (`dsh run --yes`); without it such asks are denied."""

    model_config = ConfigDict(extra="forbid")

    policy: list[Rule] = []
    default_policy: list[Rule] = list(DEFAULT_POLICY)
    unmatched: Action = "ask"
    auto_approve: bool = False
    settings: bool = True
    """Also apply the `permissions` of the session workspace's settings files (Claude Code's
    shape; a workspace's own files only once it is trusted)."""

    def rules(self) -> Sequence[Rule]:
        return (*self.policy, *self.default_policy)


def decide(config: ApprovalConfig, tool: str) -> PreDecision:
    """The policy's decision for a call of `tool`."""
    for rule in config.rules():
        if fnmatch.fnmatchcase(tool, rule.tool):
            return _decision(rule.action, tool, f'rule "{rule.tool}"')
    return _decision(config.unmatched, tool, "no rule matched")


def _decision(action: Action, tool: str, why: str) -> PreDecision:
    if action == "allow":
        return Allow()
    if action == "ask":
        return Ask(f"approval policy: {why}")
    return Deny(f'tool "{tool}" is denied by the approval policy ({why})')
