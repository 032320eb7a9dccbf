"""JSON-RPC 2.0 framing: one compact JSON object per line; errors with standard codes."""

from __future__ import annotations

import json
import os
import re
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar

import msgspec

from ..kernel import ConfigError, convert
from ..llm import ContentBlock, ImageBlock, Json, TextBlock, clean_json, clean_text, json_bytes
from ..plugins.usage import UsageLimits

if TYPE_CHECKING:
    from ..session import SessionEvent

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603

_ID = re.compile(rb'"id"\s*:\s*("(?:[^"\\]|\\.)*"|-?\d+)')


class RpcError(Exception):
    """A handler failure with a JSON-RPC error code."""

    def __init__(self, code: int, message: str, data: Json = None) -> None:
        super().__init__(message)
        self.code = code
        self.data = data


class Request(msgspec.Struct, frozen=True):
    method: str
    params: Json
    id: Json = None
    """None for a notification."""

    @property
    def is_notification(self) -> bool:
        return self.id is None


class Response(msgspec.Struct, frozen=True):
    """The client's answer to a request the server sent (`session/ask-user-question`)."""

    id: Json
    result: Json = None
    error: Json = None


def request(id: str, method: str, params: Json) -> dict[str, Json]:
    return {"jsonrpc": "2.0", "id": id, "method": method, "params": params}


_compact = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


def encode(frame: dict[str, Json]) -> bytes:
    """One frame, as the reference writes it: compact, UTF-8, newline-terminated (a lone
    surrogate as its `\\uXXXX` escape, as JavaScript's `JSON.stringify` writes it)."""
    return json_bytes(_compact(frame) + "\n")


def event_frame(session_id: str, event: SessionEvent) -> bytes:
    """`encode(notification("session.event", {sessionId, event}))`, the same bytes, built
    around the encoded event: the runtime sends one per logged event."""
    return json_bytes(
        '{"jsonrpc":"2.0","method":"session.event","params":{"sessionId":'
        f'{_compact(session_id)},"event":{_compact(event.to_json())}}}}}\n'
    )


def response(id: Json, result: Json) -> dict[str, Json]:
    return {"jsonrpc": "2.0", "id": id, "result": result}


def error(id: Json, code: int, message: str, data: Json = None) -> dict[str, Json]:
    body: dict[str, Json] = {"code": code, "message": message}
    if data is not None:
        body["data"] = data
    return {"jsonrpc": "2.0", "id": id, "error": body}


def notification(method: str, params: Json) -> dict[str, Json]:
    return {"jsonrpc": "2.0", "method": method, "params": params}


def parse(line: bytes) -> Request | Response | dict[str, Json] | None:
    """A request, a response to one of ours, an error frame to send back, or None (a blank
    line). Never raises: every other line gets an answer."""
    text = line.decode("utf-8", "replace").strip()
    if not text:
        return None
    try:
        frame = json.loads(text)
    except (ValueError, RecursionError):  # RecursionError: nesting deeper than the parser goes
        return error(readable_id(line), PARSE_ERROR, "parse error: invalid JSON")
    if not isinstance(frame, dict):
        return error(None, INVALID_REQUEST, "invalid request: a frame is a JSON object")
    id = frame.get("id")
    valid_id = id is None or (isinstance(id, str | int) and not isinstance(id, bool))
    if "method" not in frame:
        if id is not None and valid_id and ("result" in frame or "error" in frame):
            return Response(id, frame.get("result"), frame.get("error"))
        return error(id if valid_id else None, INVALID_REQUEST, "invalid request: no method")
    method = frame["method"]
    if not isinstance(method, str) or not valid_id:
        return error(id if valid_id else None, INVALID_REQUEST, "invalid request")
    return Request(method, frame.get("params"), id)


def readable_id(text: bytes) -> str | int | None:
    """The id of a frame that does not parse, if one can be read (the first `"id": <string or
    integer>` in it), else None."""
    found = _ID.search(text)
    if found is None:
        return None
    try:
        id = json.loads(found.group(1))
    except ValueError:  # an id with a broken escape ("\\x") or bytes that are not UTF-8
        return None
    return id if isinstance(id, str | int) else None


def too_large(head: bytes, tail: bytes, size: int, limit: int) -> dict[str, Json]:
    """The answer to a line longer than `limit` (only its head and tail were kept)."""
    id = readable_id(head)
    if id is None:
        id = readable_id(tail)
    message = f"invalid request: {size} bytes on one line (the limit is {limit} bytes)"
    return error(id, INVALID_REQUEST, message)


class _Params(msgspec.Struct, frozen=True, rename="camel"):
    """A method's params: camelCase keys, unknown keys ignored."""


class InitializeCapabilities(_Params, frozen=True):
    """What the client can do beyond the reference protocol."""

    ask_user_question: bool = False
    """It answers `session/ask-user-question` requests (a person is at hand)."""
    tool_progress: bool = False
    """It wants `tool.progress` notifications (a running call's output, live)."""


class LimitParams(_Params, frozen=True):
    """`limits`: the usage limits of a run (`dsh.plugins.usage.UsageLimits`), camelCase."""

    max_steps: Annotated[int, msgspec.Meta(gt=0)] | None = None
    max_tool_calls: Annotated[int, msgspec.Meta(ge=0)] | None = None
    max_tokens_in: Annotated[int, msgspec.Meta(gt=0)] | None = None
    max_tokens_out: Annotated[int, msgspec.Meta(gt=0)] | None = None
    max_cost: Annotated[float, msgspec.Meta(gt=0)] | None = None

    def usage_limits(self) -> UsageLimits:
        return UsageLimits(
            self.max_steps,
            self.max_tool_calls,
            self.max_tokens_in,
            self.max_tokens_out,
            self.max_cost,
        )


class InitializeParams(_Params, frozen=True):
    cwd: str
    provider: str
    model: str
    max_tokens: int | None = None
    reasoning_effort: str | None = None
    capabilities: InitializeCapabilities = msgspec.field(default_factory=InitializeCapabilities)
    limits: LimitParams | None = None
    """Per-run usage limits of every session this runtime drives (over the profile's)."""

    def __post_init__(self) -> None:
        if not os.path.isabs(self.cwd):
            raise ValueError("cwd must be an absolute path")


class PromptBlock(_Params, frozen=True):
    """A block of a client's prompt: text, or an image attachment. Checked here, so that
    nothing malformed is stored and then breaks every later turn of the session."""

    type: Literal["text", "image"]
    text: str | None = None
    attachment: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        if self.type == "text" and self.text is None:
            raise ValueError("a text block needs a string `text`")
        if self.type == "image" and self.attachment is None:
            raise ValueError("an image block needs an `attachment` object")

    def block(self) -> ContentBlock:
        """The content block, its text cleaned (a lone surrogate becomes U+FFFD)."""
        if self.type == "text":
            return TextBlock(clean_text(self.text or ""))
        return ImageBlock(clean_json(self.attachment or {}))


class SessionParams(_Params, frozen=True):
    session_id: Annotated[str, msgspec.Meta(min_length=1)]

    def __post_init__(self) -> None:
        if clean_text(self.session_id) != self.session_id:  # a lone surrogate: no valid name
            raise ValueError("sessionId must be valid Unicode text")


class PromptParams(SessionParams, frozen=True):
    content_blocks: Annotated[list[PromptBlock], msgspec.Meta(min_length=1)]
    limits: LimitParams | None = None
    """This prompt's run limits, over `initialize`'s (the session keeps them until a later
    prompt states its own)."""


class RewindParams(SessionParams, frozen=True):
    """`session/rewind`: back to just before prompt `to`, or `undo` the last rewind."""

    to: Annotated[int, msgspec.Meta(ge=1)] | None = None
    mode: Literal["code", "conversation", "both"] = "both"
    undo: bool = False
    force: bool = False
    dry_run: bool = False


P = TypeVar("P", bound=_Params)


def parse_params(cls: type[P], method: str, params: object) -> P:
    """`params` checked against `cls`, or an `RpcError` (invalid params) naming the key."""
    try:
        return convert(cls, {} if params is None else params)
    except ConfigError as exc:
        raise RpcError(INVALID_PARAMS, f"{method}: invalid params: {exc.lines('')}") from None
