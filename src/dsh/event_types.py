"""The names of the event types dsh reads and writes (SPEC §4.2): one constant per type, so
that no other module spells one. It imports nothing: `dsh.client` uses it without loading
the core. `dsh.events` gives each its typed shape; the registry
(`durable_event_types`) also knows the reference runtime's peripheral types, which dsh keeps
verbatim and never writes."""

from __future__ import annotations

from typing import Final

ACP_MODE: Final = "acp/mode"
AGENT_INBOX_SPLICED: Final = "agent/inbox/spliced"
APPROVAL_ASKED: Final = "approval/asked"
APPROVAL_DECIDED: Final = "approval/decided"
ASSISTANT_CHUNK: Final = "assistant/chunk"
ASSISTANT_MESSAGE: Final = "assistant/message"
COMPACTION_END: Final = "compaction/end"
COMPACTION_PRUNE: Final = "compaction/prune"
COMPACTION_START: Final = "compaction/start"
COMPACTION_SUMMARY: Final = "compaction/summary"
DEVELOPER_MESSAGE: Final = "developer/message"
HOOK_INVOKED: Final = "hook/invoked"
HOOK_RESULT: Final = "hook/result"
LLM_RETRY: Final = "llm/retry"
LLM_RETRY_STARTED: Final = "llm/retry-started"
MODEL_SWITCH: Final = "model/switch"
PLAN_MODE: Final = "plan/mode"
REQUEST_CONTEXT: Final = "request/context"
REQUEST_HEADER: Final = "request/header"
REWIND_CHECKPOINT: Final = "rewind/checkpoint"
REWIND_CODE: Final = "rewind/code"
REWIND_CONVERSATION: Final = "rewind/conversation"
SANDBOX_MODE: Final = "sandbox/mode"
SESSION_END_SEED: Final = "session/end-seed"
SESSION_TITLE: Final = "session/title"
SESSION_TITLE_LLM_REQUEST: Final = "session/title-llm-request"
STEP_END: Final = "step/end"
STEP_START: Final = "step/start"
SUBAGENT_DESCRIPTOR: Final = "subagent/descriptor"
SYSTEM_MESSAGE: Final = "system/message"
TODO_WRITE: Final = "todo/write"
TOOL_CALL: Final = "tool/call"
TOOL_PROGRESS: Final = "tool/progress"
"""Live only: a running call's output and progress (never logged; see `dsh.events`)."""
TOOL_RESULT: Final = "tool/result"
TURN_END: Final = "turn/end"
TURN_START: Final = "turn/start"
USER_MESSAGE: Final = "user/message"

__all__ = [
    "ACP_MODE",
    "AGENT_INBOX_SPLICED",
    "APPROVAL_ASKED",
    "APPROVAL_DECIDED",
    "ASSISTANT_CHUNK",
    "ASSISTANT_MESSAGE",
    "COMPACTION_END",
    "COMPACTION_PRUNE",
    "COMPACTION_START",
    "COMPACTION_SUMMARY",
    "DEVELOPER_MESSAGE",
    "HOOK_INVOKED",
    "HOOK_RESULT",
    "LLM_RETRY",
    "LLM_RETRY_STARTED",
    "MODEL_SWITCH",
    "PLAN_MODE",
    "REQUEST_CONTEXT",
    "REQUEST_HEADER",
    "REWIND_CHECKPOINT",
    "REWIND_CODE",
    "REWIND_CONVERSATION",
    "SANDBOX_MODE",
    "SESSION_END_SEED",
    "SESSION_TITLE",
    "SESSION_TITLE_LLM_REQUEST",
    "STEP_END",
    "STEP_START",
    "SUBAGENT_DESCRIPTOR",
    "SYSTEM_MESSAGE",
    "TODO_WRITE",
    "TOOL_CALL",
    "TOOL_PROGRESS",
    "TOOL_RESULT",
    "TURN_END",
    "TURN_START",
    "USER_MESSAGE",
]
