"""Approval (`ctx.require(APPROVAL)`): a per-tool allow / ask / deny policy on
`tools/pre-execute`, the `permissions` of settings files, pluggable answerers for asks, and a
durable record of every decision."""

from ...tools import Decision
from ._permissions import PermissionRule, ProjectPermissions, project_rule
from ._plugin import ApprovalPlugin, no_answerer, no_answerer_hint
from ._policy import DEFAULT_POLICY, Action, ApprovalConfig, DefaultRules, Rule, decide
from ._service import APPROVAL, Answer, Answerer, Approval, ApprovalRequest

__all__ = [
    "APPROVAL",
    "DEFAULT_POLICY",
    "Action",
    "Answer",
    "Answerer",
    "Approval",
    "ApprovalConfig",
    "ApprovalPlugin",
    "ApprovalRequest",
    "Decision",
    "DefaultRules",
    "PermissionRule",
    "ProjectPermissions",
    "Rule",
    "decide",
    "no_answerer",
    "no_answerer_hint",
    "project_rule",
]
