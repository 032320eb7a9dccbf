"""A session log as an ATIF trajectory: one pass over the log's JSON records.

It reads `event.data` as the log holds it (camelCase JSON), not the typed event classes, so
the reference runtime's logs (format 0, and format 4 as persistence reads it) convert the
same way as ours.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import msgspec

from .._version import __version__
from ..event_types import (
    ASSISTANT_MESSAGE,
    COMPACTION_SUMMARY,
    REQUEST_HEADER,
    SYSTEM_MESSAGE,
    TOOL_RESULT,
    TURN_END,
    USER_MESSAGE,
)
from ..llm import Json
from ..plugins.usage import DEFAULT_PRICES, PriceTable
from ..session import SessionEvent, SessionHeader, Usage

__all__ = ["ATIF_VERSION", "SessionLog", "to_atif"]

ATIF_VERSION = "ATIF-v1.7"
"""The ATIF version written: 1.7 added `trajectory_id` and embedded subagent trajectories."""

SUBAGENT_TOOLS = frozenset({"subagent", "subagent_fork"})


class SessionLog(msgspec.Struct, frozen=True):
    """One stored session: its header and its events (a subagent's log, for `to_atif`)."""

    header: SessionHeader
    events: Sequence[SessionEvent]


def to_atif(
    events: Iterable[SessionEvent],
    header: SessionHeader | None = None,
    *,
    children: Sequence[SessionLog] = (),
    prices: PriceTable | None = None,
    agent_name: str = "dsh",
    agent_version: str = __version__,
) -> dict[str, Json]:
    """The ATIF trajectory (a JSON object) of a session's events.

    `children` are logs of subagent sessions (any depth: those whose header names this
    session as `parentSession` are embedded, and theirs in turn); `prices` gives each
    step's cost (default: dsh's built-in DeepSeek prices). Totals in `final_metrics`
    include the subagents'. Raises ValueError for a log with nothing to show (no message).
    """
    builder = _Builder(header, prices or PriceTable(DEFAULT_PRICES), children)
    for event in events:
        builder.add(event)
    return builder.trajectory(agent_name, agent_version)


def _iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds")[:-6] + "Z"


def _text(content: Any, kind: str = "text") -> str:
    """The text of a content list's blocks of `kind`, joined."""
    if isinstance(content, str):
        return content if kind == "text" else ""
    if not isinstance(content, Sequence):
        return ""
    return "\n".join(
        str(b.get("text", "")) for b in content if isinstance(b, Mapping) and b.get("type") == kind
    )


def _arguments(raw: Any) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """Tool-call arguments as ATIF's object, and a note when the model's text was not one."""
    if isinstance(raw, Mapping):
        return dict(raw), None
    try:
        value = json.loads(raw or "{}")
    except (TypeError, ValueError):
        return {"raw": raw}, {"arguments_not_json": True}
    if isinstance(value, dict):
        return value, None
    return {"value": value}, {"arguments_not_object": True}


def _usage(raw: Any) -> Usage | None:
    if not isinstance(raw, Mapping):
        return None

    def get(key: str) -> int:
        value = raw.get(key)
        return value if isinstance(value, int) else 0

    return Usage(
        input_tokens=get("inputTokens"),
        output_tokens=get("outputTokens"),
        cache_read_tokens=get("cacheReadTokens"),
        cache_write_tokens=get("cacheWriteTokens"),
        reasoning_tokens=get("reasoningTokens"),
        requests=1,
    )


class _Totals:
    def __init__(self) -> None:
        self.prompt = self.completion = self.cached = 0
        self.cost: float | None = 0.0
        self.priced = True

    def add(self, prompt: int, completion: int, cached: int, cost: float | None) -> None:
        self.prompt += prompt
        self.completion += completion
        self.cached += cached
        if cost is None:
            if prompt or completion:  # a partial sum would read as the whole
                self.priced = False
        elif self.cost is not None:
            self.cost += cost

    def add_final(self, final: Mapping[str, Any]) -> None:
        cost = final.get("total_cost_usd")
        self.add(
            int(final.get("total_prompt_tokens") or 0),
            int(final.get("total_completion_tokens") or 0),
            int(final.get("total_cached_tokens") or 0),
            float(cost) if isinstance(cost, int | float) else None,
        )


class _Builder:
    def __init__(
        self, header: SessionHeader | None, prices: PriceTable, children: Sequence[SessionLog]
    ) -> None:
        self.header = header
        self.prices = prices
        self.children = children
        self.steps: list[dict[str, Any]] = []
        self.calls: dict[str, dict[str, Any]] = {}
        """Tool call id → the agent step that made the call."""
        self.call_times: dict[str, tuple[int, int | None]] = {}
        self.system: str | None = None
        self.tools: list[dict[str, Any]] | None = None
        self.model: str | None = None
        self.effort: str | None = None
        """The reasoning effort of the current epoch's requests (`request/header` config)."""
        self.turn_ends: list[dict[str, Any]] = []
        self.totals = _Totals()
        self.seed = header.seed_length if header is not None and header.seed_length else 0

    # -- events ---------------------------------------------------------------------------

    def add(self, event: SessionEvent) -> None:
        data: Mapping[str, Any] = event.data
        kind = event.type
        if kind == REQUEST_HEADER:
            epoch = data.get("header")
            if isinstance(epoch, Mapping):
                self._epoch(epoch, event)
        elif kind == SYSTEM_MESSAGE:
            self._system(_text(data.get("message", {}).get("content")), event)
        elif kind == USER_MESSAGE:
            self._user(data, event)
        elif kind == ASSISTANT_MESSAGE:
            self._assistant(data, event)
        elif kind == TOOL_RESULT:
            self._tool_result(data, event)
        elif kind == COMPACTION_SUMMARY:
            self._compaction(data, event)
        elif kind == TURN_END:
            reason = data.get("reason")
            end = reason.get("kind") if isinstance(reason, Mapping) else None
            self.turn_ends.append({"turn": data.get("turn"), "end": end})

    def _step(
        self, event: SessionEvent, source: str, message: str, **fields: Any
    ) -> dict[str, Any]:
        step: dict[str, Any] = {
            "step_id": len(self.steps) + 1,
            "timestamp": _iso(event.time),
            "source": source,
            "message": message,
        }
        step.update({k: v for k, v in fields.items() if v is not None})
        if event.seq < self.seed:
            step["is_copied_context"] = True
        self.steps.append(step)
        return step

    def _epoch(self, epoch: Mapping[str, Any], event: SessionEvent) -> None:
        config = epoch.get("config")
        effort = config.get("reasoningEffort") if isinstance(config, Mapping) else None
        self.effort = effort if isinstance(effort, str) else None
        tools = epoch.get("tools")
        if isinstance(tools, Sequence) and self.tools is None:
            self.tools = [
                {"type": "function", "function": dict(t)} for t in tools if isinstance(t, Mapping)
            ]
        system = epoch.get("system")
        if isinstance(system, str) and system:
            self._system(system, event)

    def _system(self, text: str, event: SessionEvent) -> None:
        """The system prompt, as a `system` step when it first appears or changes."""
        if text and text != self.system:
            self.system = text
            self._step(event, "system", text, extra={"dsh": {"kind": "system-prompt"}})

    def _user(self, data: Mapping[str, Any], event: SessionEvent) -> None:
        text = _text(data.get("content"))
        source = data.get("source")
        kind = source.get("kind") if isinstance(source, Mapping) else None
        if kind == "user" or kind is None:
            self._step(event, "user", text)
        else:  # context the harness added (a runtime snapshot, a plugin's notice)
            self._step(event, "system", text, extra={"dsh": {"source": source}})

    def _metrics(self, usage: Usage | None, provider: str, model: str) -> dict[str, Any] | None:
        if usage is None:
            return None
        prompt = usage.total_input_tokens
        price = self.prices.price(provider, model)
        cost = price.cost(usage) if price is not None else None
        self.totals.add(prompt, usage.output_tokens, usage.cache_read_tokens, cost)
        metrics: dict[str, Any] = {
            "prompt_tokens": prompt,
            "completion_tokens": usage.output_tokens,
            "cached_tokens": usage.cache_read_tokens,
        }
        if cost is not None:
            metrics["cost_usd"] = cost
        extra = {
            "cache_write_tokens": usage.cache_write_tokens,
            "reasoning_tokens": usage.reasoning_tokens,
        }
        extra = {k: v for k, v in extra.items() if v}
        if extra:
            metrics["extra"] = extra
        return metrics

    def _assistant(self, data: Mapping[str, Any], event: SessionEvent) -> None:
        message = data.get("message")
        if not isinstance(message, Mapping):
            return
        content = message.get("content")
        source = message.get("source")
        provider = str(source.get("provider", "")) if isinstance(source, Mapping) else ""
        model = str(source.get("model", "")) if isinstance(source, Mapping) else ""
        if self.model is None and model:
            self.model = model
        calls: list[dict[str, Any]] = []
        for block in content if isinstance(content, Sequence) else ():
            if isinstance(block, Mapping) and block.get("type") == "tool-call":
                arguments, note = _arguments(block.get("arguments"))
                call: dict[str, Any] = {
                    "tool_call_id": str(block.get("id", "")),
                    "function_name": str(block.get("name", "")),
                    "arguments": arguments,
                }
                if note:
                    call["extra"] = note
                calls.append(call)
        step = self._step(
            event,
            "agent",
            _text(content),
            model_name=model if model and model != self.model else None,
            reasoning_effort=self.effort,
            reasoning_content=_text(content, "reasoning") or None,
            tool_calls=calls or None,
            metrics=self._metrics(_usage(data.get("usage")), provider, model),
            llm_call_count=1,
            extra={"dsh": {"interrupted": True}} if data.get("interrupted") else None,
        )
        for call in calls:
            self.calls[call["tool_call_id"]] = step
            self.call_times[call["tool_call_id"]] = (event.time, None)

    def _tool_result(self, data: Mapping[str, Any], event: SessionEvent) -> None:
        message = data.get("message")
        content = message.get("content") if isinstance(message, Mapping) else None
        for block in content if isinstance(content, Sequence) else ():
            if not isinstance(block, Mapping) or block.get("type") != "tool-result":
                continue
            call_id = str(block.get("toolCallId", ""))
            step = self.calls.get(call_id)
            result: dict[str, Any] = {"content": _text(block.get("content"))}
            if block.get("isError"):
                result["extra"] = {"is_error": True}
            if step is None:  # a result whose call is not in this log (a cut-off seed)
                step = self._step(event, "system", "")
            else:
                result["source_call_id"] = call_id
                started, _ = self.call_times[call_id]
                self.call_times[call_id] = (started, event.time)
            step.setdefault("observation", {"results": []})["results"].append(result)

    def _compaction(self, data: Mapping[str, Any], event: SessionEvent) -> None:
        provider, model = str(data.get("provider", "")), str(data.get("model", ""))
        self._step(
            event,
            "agent",
            str(data.get("summary", "")),
            metrics=self._metrics(_usage(data.get("usage")), provider, model),
            llm_call_count=1,
            extra={"dsh": {"kind": "compaction-summary"}},
        )

    # -- subagents ------------------------------------------------------------------------

    def _subagents(self) -> list[dict[str, Any]]:
        """The embedded trajectories of this session's children, each referenced from the
        `subagent` tool call that started it (matched by its prompt, else by time)."""
        if self.header is None:
            return []
        mine = [c for c in self.children if c.header.parent_session == self.header.id]
        embedded: list[dict[str, Any]] = []
        taken: set[str] = set()
        for child in sorted(mine, key=lambda c: c.header.created_at):
            trajectory = to_atif(
                child.events, child.header, children=self.children, prices=self.prices
            )
            trajectory["trajectory_id"] = child.header.id
            embedded.append(trajectory)
            final = trajectory.get("final_metrics")
            if isinstance(final, Mapping):
                self.totals.add_final(final)
            call_id = self._call_of(child, taken)
            if call_id is None:
                continue
            taken.add(call_id)
            step = self.calls[call_id]
            results = step.setdefault("observation", {"results": []})["results"]
            result = next((r for r in results if r.get("source_call_id") == call_id), None)
            if result is None:
                result = {"source_call_id": call_id}
                results.append(result)
            ref = {"trajectory_id": child.header.id, "session_id": child.header.id}
            result.setdefault("subagent_trajectory_ref", []).append(ref)
        return embedded

    def _call_of(self, child: SessionLog, taken: set[str]) -> str | None:
        prompt = next(
            (_text(e.data.get("content")) for e in child.events if e.type == USER_MESSAGE), None
        )
        created = child.header.created_at
        candidates = [
            (call_id, call)
            for call_id, step in self.calls.items()
            if call_id not in taken
            for call in step.get("tool_calls", ())
            if call["tool_call_id"] == call_id and call["function_name"] in SUBAGENT_TOOLS
        ]
        for call_id, call in candidates:
            if prompt is not None and call["arguments"].get("prompt") == prompt:
                return call_id
        for call_id, _ in candidates:
            started, ended = self.call_times[call_id]
            if started <= created and (ended is None or created <= ended):
                return call_id
        return None

    # -- the document ---------------------------------------------------------------------

    def trajectory(self, agent_name: str, agent_version: str) -> dict[str, Any]:
        subagents = self._subagents()
        if not self.steps:
            raise ValueError("the session has no messages to export")
        agent: dict[str, Any] = {"name": agent_name, "version": agent_version}
        if self.model:
            agent["model_name"] = self.model
        if self.tools:
            agent["tool_definitions"] = self.tools
        if self.header is not None and self.header.cwd:
            agent["extra"] = {"cwd": self.header.cwd}
        totals = self.totals
        final: dict[str, Any] = {
            "total_prompt_tokens": totals.prompt,
            "total_completion_tokens": totals.completion,
            "total_cached_tokens": totals.cached,
            "total_steps": len(self.steps),
        }
        if totals.priced and totals.cost is not None:
            final["total_cost_usd"] = totals.cost
        out: dict[str, Any] = {"schema_version": ATIF_VERSION}
        if self.header is not None:
            out["session_id"] = self.header.id
        out |= {"agent": agent, "steps": self.steps, "final_metrics": final}
        if subagents:
            out["subagent_trajectories"] = subagents
            out["notes"] = "final_metrics totals include the embedded subagent trajectories."
        if self.turn_ends:
            out["extra"] = {"dsh": {"turns": self.turn_ends}}
        return out
