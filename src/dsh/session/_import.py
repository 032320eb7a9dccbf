"""Reading stored events: envelope validation, the type registry, and legacy names (SPEC §4.3)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..event_types import TURN_END, TURN_START, USER_MESSAGE
from ..llm import Json
from ._envelope import InvalidEventError, SessionEvent
from ._registry import SURFACE_TYPES, UnknownEventTypeError, event_kind

__all__ = ["import_events"]

_LEGACY_USER_MESSAGES = frozenset({"steering/message", "context/message"})
_LEGACY = _LEGACY_USER_MESSAGES | {"prompt/blocked"}
_CONTEXT_SOURCE: Json = {"kind": "plugin", "plugin": "legacy-context"}


def import_events(raw_events: Iterable[Mapping[str, Json]], session_id: str) -> list[SessionEvent]:
    """Turn stored event lines (parsed JSON, no header, no packed rows) into `SessionEvent`s.

    Envelopes are validated, seqs must be contiguous, and unknown types are refused unless
    marked `ignorable`. Legacy names are mapped: `steering/message` and `context/message`
    become `user/message`; `prompt/blocked` is dropped (its turn ends `blocked`; later seqs
    close up); `turn/start.trigger` is dropped; old `turn/end` reasons are rewritten; surface
    messages without an id get `legacy-message:<sessionId>:<seq>`.
    """
    mapped: list[dict[str, Json]] = []
    renumber: dict[int, int] = {}
    dropped = False
    expected: int | None = None
    next_seq = 0
    blocked_turn = False
    for index, raw in enumerate(raw_events):
        if not isinstance(raw, Mapping):
            raise InvalidEventError(f"line {index + 1}: an event must be a JSON object")
        seq = raw.get("seq")
        kind = raw.get("type")
        if type(seq) is not int:
            raise InvalidEventError(f"line {index + 1} ({kind!r}): seq must be an int")
        if expected is not None and seq != expected:
            raise InvalidEventError(f"event {seq} ({kind}): expected seq {expected} (a gap)")
        if expected is None:
            next_seq = seq
        expected = seq + 1
        known = kind in _LEGACY or event_kind(str(kind)) is not None
        if not known and raw.get("ignorable") is not True:
            raise UnknownEventTypeError(
                f"event {seq} ({kind}): unknown event type that is not ignorable"
            )
        if kind == "prompt/blocked":
            blocked_turn = True
            dropped = True
            continue
        event = dict(raw)
        if kind == TURN_START:
            blocked_turn = False
            data = _data(event)
            if "trigger" in data:
                event["data"] = {k: v for k, v in data.items() if k != "trigger"}
        elif kind == TURN_END:
            event["data"] = _turn_end(_data(event), blocked_turn)
            blocked_turn = False
        elif kind in _LEGACY_USER_MESSAGES:
            event["type"] = USER_MESSAGE
            event["data"] = _legacy_user_message(_data(event), kind)
        renumber[seq] = next_seq
        event["seq"] = next_seq
        next_seq += 1
        if event["type"] in SURFACE_TYPES:
            event.setdefault("surfaceOp", "append")
            _mint_missing_id(event, session_id)
        mapped.append(event)
    if dropped:
        for event in mapped:
            _remap_seqs(event, renumber)
    return [SessionEvent.from_json(event) for event in mapped]


def _data(event: Mapping[str, Json]) -> Mapping[str, Json]:
    data = event.get("data")
    if not isinstance(data, Mapping):
        raise InvalidEventError(f"event {event.get('seq')} ({event.get('type')}): no data object")
    return data


def _turn_end(data: Mapping[str, Json], blocked: bool) -> dict[str, Json]:
    reason: Any = data.get("reason")
    if isinstance(reason, str):
        reason = {"kind": reason}
    if not isinstance(reason, Mapping):
        return dict(data)
    kind = reason.get("kind")
    if kind == "disposed":
        reason = {"kind": "aborted", "reason": {"kind": "disposed"}}
    elif kind == "aborted" and "reason" not in reason:
        reason = {"kind": "aborted", "reason": {"kind": "legacy"}}
    elif kind == "error" and "error" not in reason:
        failure = reason.get("failure")
        if not isinstance(failure, Mapping):
            failure = {"message": str(reason.get("message", "unknown error")), "code": "UNKNOWN"}
        reason = {"kind": "error", "error": failure}
    elif kind == "completed" and blocked:
        reason = {"kind": "blocked"}
    return {**data, "reason": reason}


def _legacy_user_message(data: Mapping[str, Json], kind: str) -> dict[str, Json]:
    message = data.get("message")
    if isinstance(message, Mapping):
        out = dict(message)
    else:
        default_source: Json = {"kind": "user"} if kind == "steering/message" else _CONTEXT_SOURCE
        out = {"content": data.get("content", []), "source": data.get("source", default_source)}
        if "id" in data:
            out["id"] = data["id"]
    content = out.get("content")
    if isinstance(content, str):
        out["content"] = [{"type": "text", "text": content}]
    out["role"] = "user"
    return out


def _mint_missing_id(event: dict[str, Json], session_id: str) -> None:
    data = event.get("data")
    if not isinstance(data, Mapping):
        return
    message = data if event["type"] == USER_MESSAGE else data.get("message")
    if isinstance(message, Mapping) and not message.get("id"):
        minted = {**message, "id": f"legacy-message:{session_id}:{event['seq']}"}
        event["data"] = minted if message is data else {**data, "message": minted}


def _remap_seqs(event: dict[str, Json], renumber: Mapping[int, int]) -> None:
    seqs = event.get("sourceEventSeqs")
    if isinstance(seqs, list):
        event["sourceEventSeqs"] = [
            renumber[s] for s in seqs if isinstance(s, int) and s in renumber
        ]
    op = event.get("surfaceOp")
    if isinstance(op, Mapping) and op.get("op") == "replace":
        event["surfaceOp"] = {
            **op,
            "start": renumber.get(op.get("start"), op.get("start")),  # type: ignore[arg-type]
            "end": renumber.get(op.get("end"), op.get("end")),  # type: ignore[arg-type]
        }
