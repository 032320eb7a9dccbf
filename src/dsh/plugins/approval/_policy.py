"""The approval policy: ordered `{tool, action}` rules over tool-name patterns."""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Sequence
from typing import Literal, TypeAlias

import msgspec

from ...kernel import ConfigRecord
from ...tools import Allow, Ask, Deny, PreDecision

__all__ = ["DEFAULT_POLICY", "Action", "ApprovalConfig", "DefaultRules", "Rule", "decide"]

Action = Literal["allow", "ask", "deny"]


class Rule(ConfigRecord):
    """`tool` is an `fnmatch` pattern over tool names (`*`, `?`, `[…]`, case-sensitive)."""

    tool: str
    action: Action


DEFAULT_POLICY: tuple[Rule, ...] = (
    *(
        Rule(tool=name, action="allow")
        for name in (
            *("read", "glob", "grep", "todo_write", "skill", "ask_user_question"),
            *("list_agents", "interrupt_agent"),
        )
    ),
    *(Rule(tool=name, action="ask") for name in ("write", "edit", "bash")),
)
"""Reads, searches, the todo list, skills, questions to the user, and looking at or stopping
background subagents run; changes to files, commands and new work for subagents ask."""


class ApprovalConfig(ConfigRecord):
    """`policy` is checked first, then `default_policy`; the first matching rule decides,
    and `unmatched` decides for a tool no rule names. `auto_approve` answers `once` to every
    ask when no answerer is registered (`dsh run --yes`); without it such asks are denied."""

    policy: list[Rule] = msgspec.field(default_factory=list)
    default_policy: list[Rule] = msgspec.field(default_factory=lambda: list(DEFAULT_POLICY))
    unmatched: Action = "ask"
    auto_approve: bool = False
    settings: bool = True
    """Also apply the `permissions` of the session workspace's settings files (Claude Code's
    shape; a workspace's own files only once it is trusted)."""


DefaultRules: TypeAlias = Callable[[str], "Rule | None"]
"""A plugin's defaults for the tools it registers: the rule that applies to a tool name, or
None when the name is not the plugin's (e.g. MCP: `mcp__github__*` asks)."""


def decide(config: ApprovalConfig, tool: str, defaults: Sequence[DefaultRules] = ()) -> PreDecision:
    """The policy's decision for a call of `tool`: the user's `policy`, then the plugins'
    `defaults`, then `default_policy`, then `unmatched`."""
    rule = _first_match(config.policy, tool)
    for source in defaults if rule is None else ():
        rule = source(tool)
        if rule is not None:
            break
    rule = rule or _first_match(config.default_policy, tool)
    if rule is None:
        return _decision(config.unmatched, tool, "no rule matched")
    return _decision(rule.action, tool, f'rule "{rule.tool}"')


def _first_match(rules: Sequence[Rule], tool: str) -> Rule | None:
    return next((rule for rule in rules if fnmatch.fnmatchcase(tool, rule.tool)), None)


def _decision(action: Action, tool: str, why: str) -> PreDecision:
    if action == "allow":
        return Allow()
    if action == "ask":
        return Ask(f"approval policy: {why}")
    return Deny(f'tool "{tool}" is denied by the approval policy ({why})')
