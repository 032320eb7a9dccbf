"""What a log says was sent to the model and what its tools did, in comparable form.

A request is a pure function of the log (SPEC §4.2): the `request/header` fold (config,
system prompt, tool schemas) and the history derived from the surface before the answer. Both
sides of a replay are read the same way, so a difference is a difference in what was sent.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import msgspec

from ..event_types import ASSISTANT_MESSAGE, TOOL_CALL, TOOL_RESULT
from ..llm import Json, Message, expect
from ..session import Session, SessionEvent, SessionHeader

__all__ = ["RequestView", "ToolView", "answered", "request_views", "tool_views"]

_ROUTE_KEYS = ("provider",)
"""Config keys that name where a request went, not what it said (a replay serves every
request from its loopback server, whatever the recorded provider was)."""


class RequestView(msgspec.Struct, frozen=True):
    """One model request as the log gives it: `number` counts the session's answered
    requests from 1; `body` is `{model, config, system, tools, messages}` (messages without
    their ids and sources: what the model reads); `answer` the message that answered it
    (a replay's must be the recorded one: else its answers went astray)."""

    number: int
    turn: int
    step: int
    body: dict[str, Json]
    answer: dict[str, Json] = msgspec.field(default_factory=dict)


class ToolView(msgspec.Struct, frozen=True):
    """One tool call and its result, as logged: `turn`, `step` and `call_id` place it in the
    trajectory (a call id alone may recur: each `dsh run -c` of a loopback model restarts
    them, and providers may reuse them)."""

    number: int
    call_id: str
    name: str
    arguments: str
    result: Json
    """`{content, isError}` of the `tool/result`, plus its `error` when it has one (None: no
    result was logged)."""
    turn: int = 0
    step: int = 0

    @property
    def place(self) -> tuple[int, int, str]:
        return (self.turn, self.step, self.call_id)


def answered(event: SessionEvent) -> bool:
    """An `assistant/message` that answered a request (not one cut by a cancel)."""
    return event.type == ASSISTANT_MESSAGE and not event.data.get("interrupted")


def request_views(header: SessionHeader, events: Sequence[SessionEvent]) -> list[RequestView]:
    """The requests of a log, one per answered `assistant/message`, each rebuilt from the
    events before it."""
    views: list[RequestView] = []
    for index, event in enumerate(events):
        if answered(event):
            prefix = Session(header, events[:index])
            body = _body(prefix)
            turn, step = _turn_step(event)
            answer = _message(Message.from_json(expect(event.data.get("message"), dict)))
            views.append(RequestView(len(views) + 1, turn, step, body, answer))
    return views


def _body(session: Session) -> dict[str, Json]:
    header = session.request_header()
    config: dict[str, Json] = {} if header is None else dict(header.config.to_json())
    model = config.pop("model", None)
    for key in _ROUTE_KEYS:
        config.pop(key, None)
    tools: Json = [] if header is None else [t.to_json() for t in header.tools]
    messages: list[Json] = [_message(m) for m in session.derive_messages()]
    return {
        "model": model,
        "config": config,
        "system": session.system_prompt(),
        "tools": tools,
        "messages": messages,
    }


def _message(message: Message) -> dict[str, Json]:
    return {"role": message.role, "content": [b.to_json() for b in message.content]}


def tool_views(events: Sequence[SessionEvent]) -> list[ToolView]:
    """The tool calls of a log in the order they were logged, each with its result (the
    `tool/result` of the same turn, step and call id)."""
    results: dict[tuple[int, int, str], Mapping[str, Json]] = {}
    for event in events:
        if event.type == TOOL_RESULT:
            message = expect(event.data.get("message"), dict)
            for block in expect(message.get("content"), list):
                call_id = expect(block, dict).get("toolCallId")
                if isinstance(call_id, str):
                    results[(*_turn_step(event), call_id)] = event.data
    views: list[ToolView] = []
    for event in events:
        if event.type != TOOL_CALL:
            continue
        call_id = str(event.data.get("callId"))
        turn, step = _turn_step(event)
        result = results.get((turn, step, call_id))
        views.append(
            ToolView(
                len(views) + 1,
                call_id,
                str(event.data.get("name")),
                str(event.data.get("arguments")),
                None if result is None else _result(result, call_id),
                turn,
                step,
            )
        )
    return views


def _turn_step(event: SessionEvent) -> tuple[int, int]:
    return _int(event.data.get("turn")), _int(event.data.get("step"))


def _result(data: Mapping[str, Json], call_id: str) -> Json:
    message = expect(data.get("message"), dict)
    for block in expect(message.get("content"), list):
        block = expect(block, dict)
        if block.get("toolCallId") == call_id:
            out: dict[str, Json] = {
                "content": block.get("content"),
                "isError": bool(block.get("isError")),
            }
            if data.get("error") is not None:
                out["error"] = data.get("error")
            return out
    return None


def _int(value: Json) -> int:
    return value if isinstance(value, int) else 0
