"""Session format 4 (the reference runtime 0.2.1's): its log lines ↔ this runtime's events.

A format-4 session holds the events of `dsh.session` like any other; only its stored lines
differ, and they are translated here on the way in (`lift_*`) and out (`lower_*`), so that
the reference runtime resumes what is written here and the reverse. What differs from
format 0:

- the header has `isSeeded` instead of `seedLength`: the inherited prefix of a fork ends at
  the `session/end-seed {inherited: true}` marker;
- a tool result is a `role: "tool"` message (`toolCallId`, `content`, `isError`) instead of a
  user message holding one `tool-result` block;
- an assistant message embeds its stream (`data.stream`; empty here, the chunks are their own
  records) and cites no source events; its message starts with `role`;
- a plugin's message source is `{kind: "plugin:<name>", …}` (no `plugin` field);
- a replace op names `startSeq` / `endSeq`, and `sourceEventSeqs` may hold `[start, end]` runs;
- `request/header` has no `system`: the system prompt is the first surface node, a
  `system/message` (the loop logs it for format-4 sessions);
- a type of this runtime outside the reference's vocabulary (`assistant/chunk`, a plugin's
  registered type) is stored as `plugin:<type>`, marked `ignorable`, as the reference stores
  its plugins' records: it keeps them without interpreting them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from itertools import pairwise
from typing import Any

from ..event_types import DEVELOPER_MESSAGE
from ..events import (
    ApprovalAskedEvent,
    ApprovalDecidedEvent,
    AssistantMessageEvent,
    CompactionEndEvent,
    CompactionPruneEvent,
    CompactionStartEvent,
    CompactionSummaryEvent,
    HookInvokedEvent,
    HookResultEvent,
    InboxSplicedEvent,
    PlanModeEvent,
    RequestContextEvent,
    RequestHeaderEvent,
    RetryEvent,
    RetryStartedEvent,
    SandboxModeEvent,
    SeedEndEvent,
    SessionTitleEvent,
    StepEndEvent,
    StepStartEvent,
    SubagentDescriptorEvent,
    SystemMessageEvent,
    TitleRequestEvent,
    TodoWriteEvent,
    ToolCallEvent,
    ToolResultEvent,
    TurnEndEvent,
    TurnStartEvent,
    UserMessageEvent,
)
from ..llm import Json
from ..session import ReplaceOp, SessionEvent, SessionHeader, event_kind

__all__ = [
    "NOT_STARTED_TEXT_V4",
    "REFERENCE_TYPES",
    "VERSION",
    "lift_header",
    "lift_rows",
    "lower_event",
    "lower_header",
    "seq_ranges",
]

VERSION = 4

REFERENCE_TYPES = frozenset(
    {
        "agent-preset/selected",
        InboxSplicedEvent.type,
        ApprovalAskedEvent.type,
        ApprovalDecidedEvent.type,
        "approval/policy",
        "assistant/attempt",
        AssistantMessageEvent.type,
        "command/done",
        "command/run",
        CompactionEndEvent.type,
        CompactionPruneEvent.type,
        CompactionStartEvent.type,
        CompactionSummaryEvent.type,
        "deliverables/presented",
        DEVELOPER_MESSAGE,
        "feedback/message-delete",
        "feedback/message-put",
        "feedback/record",
        "goal/change",
        HookInvokedEvent.type,
        HookResultEvent.type,
        "image/offload",
        "job/registered",
        "job/settled",
        RetryEvent.type,
        RetryStartedEvent.type,
        "model/selection",
        "permission/preset",
        PlanModeEvent.type,
        RequestContextEvent.type,
        RequestHeaderEvent.type,
        SandboxModeEvent.type,
        "schedule/change",
        "session-log-deepseek/delivery-accepted",
        SeedEndEvent.type,
        SessionTitleEvent.type,
        TitleRequestEvent.type,
        StepEndEvent.type,
        StepStartEvent.type,
        "subagent/catalog",
        SubagentDescriptorEvent.type,
        "subagent/model-selection-policy",
        SystemMessageEvent.type,
        "team/member",
        "team/message/delivered",
        "team/message/queued",
        "team/task",
        TodoWriteEvent.type,
        "tool-workflow/agent-end",
        "tool-workflow/agent-start",
        "tool-workflow/run-end",
        "tool-workflow/run-start",
        ToolCallEvent.type,
        "tool/ptc-dispatch",
        "tool/ptc-dispatch-start",
        ToolResultEvent.type,
        TurnEndEvent.type,
        TurnStartEvent.type,
        UserMessageEvent.type,
        "web/deepseek-search-llm-request",
        "working-directory/change",
        "workspace/changes",
    }
)
"""The event types the reference runtime 0.2.1 interprets; it refuses any other type unless
the record is marked `ignorable`."""

NOT_STARTED_TEXT_V4 = (
    "The tool call was interrupted before the Harness recorded it as started. Retry it if it "
    "is still needed."
)
"""The text of a format-4 `TOOL_NOT_STARTED` repair (a log fact: the reference accepts a
tool result without its `tool/call` only in exactly this shape)."""

_PLUGIN = "plugin:"
_MESSAGE_KEYS = {
    AssistantMessageEvent.type: "message",
    ToolResultEvent.type: "message",
    SystemMessageEvent.type: "message",
    DEVELOPER_MESSAGE: "message",
    InboxSplicedEvent.type: "inserted",
    TitleRequestEvent.type: "messages",
}
"""Where an event's data holds messages (a `user/message`'s data is its message)."""
_TRANSLATED = frozenset({*_MESSAGE_KEYS, UserMessageEvent.type, SeedEndEvent.type})
"""The types whose data differs between the formats."""
_TOOL_FIELDS = frozenset({"role", "source", "toolCallId", "content", "isError", "id"})

# -- header ----------------------------------------------------------------------------------


def lift_header(
    raw: Mapping[str, Json], rows: Sequence[Mapping[str, Json]] | None
) -> dict[str, Json]:
    """A format-4 header line as a `SessionHeader.from_json` value. `seedLength` is the seq of
    the last inherited end-seed marker among `rows` (unknown without them)."""
    out = {k: v for k, v in raw.items() if k != "isSeeded"}
    if raw.get("isSeeded") is True and rows is not None:
        cut = _inherited_cut(rows)
        if cut is not None:
            out["seedLength"] = cut
    return out


def lower_header(header: SessionHeader) -> dict[str, Json]:
    """The format-4 header line of `header`: its format-0 line with `isSeeded` for
    `seedLength`, where the reference puts it (before `origin` / `delegationDepth`)."""
    line = header.to_json()
    items = [(k, v) for k, v in line.items() if k != "seedLength" and k not in header.extra]
    at = next(i for i, (k, _) in enumerate(items) if k in ("origin", "delegationDepth"))
    items.insert(at, ("isSeeded", header.seed_length is not None))
    return {**dict(items), "version": VERSION}


def _inherited_cut(rows: Sequence[Mapping[str, Any]]) -> int | None:
    for row in reversed(rows):
        data = row.get("data")
        if (
            row.get("type") == SeedEndEvent.type
            and isinstance(data, Mapping)
            and data.get("inherited") is True
        ):
            seq = row.get("seq")
            return seq if type(seq) is int else None
    return None


# -- reading ---------------------------------------------------------------------------------


def lift_rows(rows: Sequence[Mapping[str, Json]]) -> list[Mapping[str, Json]]:
    """Format-4 event lines as this runtime's event lines (`import_events` reads them next)."""
    return [_lift_row(row) if isinstance(row, dict) else row for row in rows]


def _lift_row(row: dict[str, Any]) -> dict[str, Any]:
    out = dict(row)
    kind = out.get("type")
    if isinstance(kind, str) and kind.startswith(_PLUGIN) and _ours(kind[len(_PLUGIN) :]):
        kind = out["type"] = kind[len(_PLUGIN) :]
        out.pop("ignorable", None)
    seqs = out.get("sourceEventSeqs")
    if isinstance(seqs, list):
        out["sourceEventSeqs"] = _expand(seqs)
    op = out.get("surfaceOp")
    if isinstance(op, dict) and op.get("op") == "replace":
        out["surfaceOp"] = {"op": "replace", "start": op.get("startSeq"), "end": op.get("endSeq")}
    data = out.get("data")
    if kind in _TRANSLATED and isinstance(data, dict):
        out["data"] = _lift_data(kind, data)
    return out


def _lift_data(kind: str, data: dict[str, Any]) -> Mapping[str, Any]:
    if kind == AssistantMessageEvent.type and data.get("stream") == []:
        data = {k: v for k, v in data.items() if k != "stream"}
    elif kind == SeedEndEvent.type:
        if data.get("inherited") is True:
            return {k: v for k, v in data.items() if k != "inherited"}
        return data
    return _map_messages(kind, data, _lift_message)


def _lift_message(kind: str, message: Mapping[str, Any]) -> Mapping[str, Any]:
    source = message.get("source")
    lifted = _lift_source(source) if isinstance(source, dict) else source
    if kind == ToolResultEvent.type and message.get("role") == "tool" and "toolCallId" in message:
        block: dict[str, Any] = {
            "type": "tool-result",
            "toolCallId": message["toolCallId"],
            "content": message.get("content"),
        }
        if "isError" in message:
            block["isError"] = message["isError"]
        out = {"content": [block], "source": lifted, "role": "user", "id": message.get("id")}
        out.update((k, v) for k, v in message.items() if k not in _TOOL_FIELDS)
        return out
    if lifted is source:
        return message
    return {**message, "source": lifted}


def _lift_source(source: Mapping[str, Any]) -> Mapping[str, Any]:
    kind = source.get("kind")
    if not (isinstance(kind, str) and kind.startswith(_PLUGIN)):
        return source
    out: dict[str, Any] = {"kind": "plugin", "plugin": kind[len(_PLUGIN) :]}
    out.update((k, v) for k, v in source.items() if k != "kind")
    return out


def _expand(seqs: list[Any]) -> list[Any]:
    """`[3, [5, 9]]` → `[3, 5, 6, 7, 8, 9]` (runs as the reference writes them)."""
    if not any(isinstance(s, list) for s in seqs):
        return seqs
    out: list[Any] = []
    for item in seqs:
        if isinstance(item, list) and len(item) == 2 and all(type(i) is int for i in item):
            out.extend(range(item[0], item[1] + 1))
        else:
            out.append(item)
    return out


# -- writing ---------------------------------------------------------------------------------


def lower_event(event: SessionEvent, header: SessionHeader) -> dict[str, Json]:
    """The format-4 line of `event` (the reference's key order)."""
    kind = event.type
    line: dict[str, Any] = {
        "type": _PLUGIN + kind if _ours(kind) else kind,
        "seq": event.seq,
        "time": event.time,
        "data": _lower_data(event, header),
    }
    if event.ignorable or _ours(kind):
        line["ignorable"] = True
    if event.source_event_seqs is not None and kind != AssistantMessageEvent.type:
        line["sourceEventSeqs"] = seq_ranges(event.source_event_seqs)
    op = event.surface_op
    if isinstance(op, ReplaceOp):
        line["surfaceOp"] = {"op": "replace", "startSeq": op.start, "endSeq": op.end}
    elif op is not None:
        line["surfaceOp"] = op
    return line


def _lower_data(event: SessionEvent, header: SessionHeader) -> Mapping[str, Any]:
    kind = event.type
    data: Mapping[str, Any] = event.data
    if kind == AssistantMessageEvent.type and "stream" not in data:
        data = {**data, "stream": []}
    elif kind == RequestHeaderEvent.type:
        request = data.get("header")
        if isinstance(request, dict) and "system" in request:
            trimmed = {k: v for k, v in request.items() if k != "system"}
            return {**data, "header": trimmed}
        return data
    elif kind == SeedEndEvent.type and event.seq == header.seed_length:
        return {**data, "inherited": True}
    return _map_messages(kind, data, _lower_message)


def _lower_message(kind: str, message: Mapping[str, Any]) -> Mapping[str, Any]:
    source = message.get("source")
    lowered = _lower_source(source) if isinstance(source, dict) else source
    if kind == ToolResultEvent.type:
        tool = _tool_message(message, lowered)
        if tool is not None:
            return tool
    if kind in (AssistantMessageEvent.type, SystemMessageEvent.type, DEVELOPER_MESSAGE):
        out = {"role": message.get("role")}
        out.update((k, lowered if k == "source" else v) for k, v in message.items())
        return out
    if lowered is source:
        return message
    return {**message, "source": lowered}


def _tool_message(message: Mapping[str, Any], source: Any) -> dict[str, Any] | None:
    content = message.get("content")
    if not (isinstance(content, list) and len(content) == 1 and isinstance(content[0], dict)):
        return None
    block = content[0]
    if block.get("type") != "tool-result":
        return None
    out: dict[str, Any] = {
        "role": "tool",
        "source": source,
        "toolCallId": block.get("toolCallId"),
        "content": block.get("content"),
    }
    if "isError" in block:
        out["isError"] = block["isError"]
    out["id"] = message.get("id")
    out.update((k, v) for k, v in message.items() if k not in _TOOL_FIELDS)
    return out


def _lower_source(source: Mapping[str, Any]) -> Mapping[str, Any]:
    plugin = source.get("plugin")
    if source.get("kind") != "plugin" or not isinstance(plugin, str):
        return source
    out: dict[str, Any] = {"kind": _PLUGIN + plugin}
    out.update((k, v) for k, v in source.items() if k not in ("kind", "plugin"))
    return out


def seq_ranges(seqs: Sequence[int]) -> list[Json]:
    """`sourceEventSeqs` as the reference writes them: runs of three or more increasing
    seqs as `[start, end]`."""
    if any(b <= a for a, b in pairwise(seqs)):
        return list(seqs)
    out: list[Any] = []
    i = 0
    while i < len(seqs):
        j = i
        while j + 1 < len(seqs) and seqs[j + 1] == seqs[j] + 1:
            j += 1
        if j - i >= 2:
            out.append([seqs[i], seqs[j]])
        else:
            out.extend(seqs[i : j + 1])
        i = j + 1
    return out


# -- both ways -------------------------------------------------------------------------------

_MessageMap = Callable[[str, Mapping[str, Any]], Mapping[str, Any]]


def _map_messages(kind: str, data: Mapping[str, Any], convert: _MessageMap) -> Mapping[str, Any]:
    """`data` with `convert` applied to each message it carries (unchanged: `data` itself)."""
    if kind == UserMessageEvent.type:
        return convert(kind, data)
    key = _MESSAGE_KEYS.get(kind)
    value = None if key is None else data.get(key)
    if key is None or value is None:
        return data
    if isinstance(value, dict):
        converted = convert(kind, value)
        return data if converted is value else {**data, key: converted}
    if not isinstance(value, list):
        return data
    mapped = [convert(kind, m) if isinstance(m, dict) else m for m in value]
    if all(a is b for a, b in zip(mapped, value, strict=True)):
        return data
    return {**data, key: mapped}


def _ours(kind: str) -> bool:
    """A type this runtime knows that the reference does not: stored as `plugin:<type>`."""
    return kind not in REFERENCE_TYPES and event_kind(kind) is not None
