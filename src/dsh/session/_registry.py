"""The durable event types a session log may hold (SPEC §4.2), and the hook to add more."""

from __future__ import annotations

import enum

from ..event_types import (
    AGENT_INBOX_SPLICED,
    APPROVAL_ASKED,
    APPROVAL_DECIDED,
    ASSISTANT_CHUNK,
    ASSISTANT_MESSAGE,
    COMPACTION_END,
    COMPACTION_PRUNE,
    COMPACTION_START,
    COMPACTION_SUMMARY,
    DEVELOPER_MESSAGE,
    HOOK_INVOKED,
    HOOK_RESULT,
    LLM_RETRY,
    LLM_RETRY_STARTED,
    MODEL_SWITCH,
    PLAN_MODE,
    REQUEST_CONTEXT,
    REQUEST_HEADER,
    REWIND_CHECKPOINT,
    REWIND_CODE,
    REWIND_CONVERSATION,
    SANDBOX_MODE,
    SESSION_END_SEED,
    SESSION_TITLE,
    SESSION_TITLE_LLM_REQUEST,
    STEP_END,
    STEP_START,
    SUBAGENT_DESCRIPTOR,
    SYSTEM_MESSAGE,
    TODO_WRITE,
    TOOL_CALL,
    TOOL_RESULT,
    TURN_END,
    TURN_START,
    USER_MESSAGE,
)
from ._envelope import InvalidEventError

__all__ = [
    "SURFACE_TYPES",
    "EventKind",
    "UnknownEventTypeError",
    "durable_event_types",
    "event_kind",
    "register_event_type",
]


class EventKind(enum.StrEnum):
    SURFACE = "surface"
    """Produces a model message; the append carries a surface op."""
    LOG = "log"
    """A core log-only type."""
    PERIPHERAL = "peripheral"
    """A log-only type of a peripheral plugin of the reference runtime; kept verbatim."""
    PLUGIN = "plugin"
    """Registered at run time with `register_event_type`."""


class UnknownEventTypeError(InvalidEventError):
    """An event type nobody registered, on an envelope not marked `ignorable`."""


SURFACE_TYPES = frozenset(
    {USER_MESSAGE, ASSISTANT_MESSAGE, TOOL_RESULT, SYSTEM_MESSAGE, DEVELOPER_MESSAGE}
)
"""The event types that are surface nodes. `system/message` (the system prompt, the first
node of a format-4 log) and `developer/message` (the reference runtime's tool announcements)
are nodes that contribute no history message: the loop sends its own system prompt and tools."""

_CORE_LOG = (
    TURN_START,
    TURN_END,
    STEP_START,
    STEP_END,
    ASSISTANT_CHUNK,
    TOOL_CALL,
    REQUEST_HEADER,
    REQUEST_CONTEXT,
    MODEL_SWITCH,
    SESSION_END_SEED,
    AGENT_INBOX_SPLICED,
    TODO_WRITE,
    COMPACTION_START,
    COMPACTION_SUMMARY,
    COMPACTION_END,
    COMPACTION_PRUNE,
    LLM_RETRY,
    LLM_RETRY_STARTED,
    HOOK_INVOKED,
    HOOK_RESULT,
    SUBAGENT_DESCRIPTOR,
    REWIND_CHECKPOINT,
    REWIND_CODE,
    REWIND_CONVERSATION,
    "tool/code-dispatch-start",
    "tool/code-dispatch",
)

_PERIPHERAL = (
    PLAN_MODE,
    SANDBOX_MODE,
    APPROVAL_ASKED,
    APPROVAL_DECIDED,
    "approval/policy",
    "permission/preset",
    "goal/change",
    "schedule/change",
    SESSION_TITLE,
    SESSION_TITLE_LLM_REQUEST,
    "command/run",
    "command/done",
    "feedback/record",
    "agent-preset/selected",
    "team/*",
    "tool-workflow/*",
    # The rest of the vocabulary of the reference runtime's session format 4 (0.2.1).
    "session-log-deepseek/delivery-accepted",
    "job/registered",
    "job/settled",
    "assistant/attempt",
    "deliverables/presented",
    "feedback/message-delete",
    "feedback/message-put",
    "image/offload",
    "model/selection",
    "subagent/catalog",
    "subagent/model-selection-policy",
    "tool/ptc-dispatch-start",
    "tool/ptc-dispatch",
    "web/deepseek-search-llm-request",
    "working-directory/change",
    "workspace/changes",
)

_known: dict[str, EventKind] = {
    **dict.fromkeys(SURFACE_TYPES, EventKind.SURFACE),
    **dict.fromkeys(_CORE_LOG, EventKind.LOG),
    **{t: EventKind.PERIPHERAL for t in _PERIPHERAL if not t.endswith("/*")},
}
# Families registered as `prefix/*`: every type under the prefix.
_families: dict[str, EventKind] = {
    t[:-1]: EventKind.PERIPHERAL for t in _PERIPHERAL if t.endswith("/*")
}


def register_event_type(name: str) -> None:
    """Make a plugin's durable event type loadable and appendable (process-wide, idempotent).

    `name` is a type like `"my-plugin/thing"`, or a family `"my-plugin/*"`. Log-only: the
    three surface types are fixed. Register at import or in `apply`, before logs holding the
    type are loaded.
    """
    if not name or name.startswith("/") or "/" not in name.rstrip("*"):
        raise ValueError(f"event type {name!r} must look like 'owner/name' or 'owner/*'")
    if name.endswith("/*"):
        _families.setdefault(name[:-1], EventKind.PLUGIN)
    elif name not in _known:
        _known[name] = EventKind.PLUGIN


def event_kind(name: str) -> EventKind | None:
    """The kind of a registered type, or None when unknown."""
    kind = _known.get(name)
    if kind is not None:
        return kind
    for prefix, family in _families.items():
        if name.startswith(prefix):
            return family
    return None


def durable_event_types() -> dict[str, EventKind]:
    """Every registered type (families as `prefix/*`)."""
    return {**_known, **{prefix + "*": kind for prefix, kind in _families.items()}}
