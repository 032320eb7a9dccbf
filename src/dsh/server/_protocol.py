"""JSON-RPC 2.0 framing: one compact JSON object per line; errors with standard codes."""

from __future__ import annotations

import json
import os
import re
from typing import TYPE_CHECKING, Any, Literal

import msgspec
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictStr,
    ValidationError,
    field_validator,
    model_validator,
)

from ..llm import ContentBlock, ImageBlock, Json, TextBlock, clean_json, clean_text, json_bytes

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


class InitializeCapabilities(BaseModel):
    """What the client can do beyond the reference protocol."""

    model_config = ConfigDict(extra="ignore")
    ask_user_question: bool = Field(default=False, alias="askUserQuestion")
    """It answers `session/ask-user-question` requests (a person is at hand)."""


class InitializeParams(BaseModel):
    model_config = ConfigDict(extra="ignore")
    cwd: str
    provider: str
    model: str
    max_tokens: int | None = Field(default=None, alias="maxTokens")
    reasoning_effort: str | None = Field(default=None, alias="reasoningEffort")
    capabilities: InitializeCapabilities = Field(default_factory=InitializeCapabilities)

    @field_validator("cwd")
    @classmethod
    def _absolute(cls, value: str) -> str:
        if not os.path.isabs(value):
            raise ValueError("cwd must be an absolute path")
        return value


class PromptBlock(BaseModel):
    """A block of a client's prompt: text, or an image attachment. Checked here, so that
    nothing malformed is stored and then breaks every later turn of the session."""

    model_config = ConfigDict(extra="ignore")
    type: Literal["text", "image"]
    text: StrictStr | None = None
    attachment: dict[str, Any] | None = None

    @model_validator(mode="after")
    def _complete(self) -> PromptBlock:
        if self.type == "text" and self.text is None:
            raise ValueError("a text block needs a string `text`")
        if self.type == "image" and self.attachment is None:
            raise ValueError("an image block needs an `attachment` object")
        return self

    def block(self) -> ContentBlock:
        """The content block, its text cleaned (a lone surrogate becomes U+FFFD)."""
        if self.type == "text":
            return TextBlock(clean_text(self.text or ""))
        return ImageBlock(clean_json(self.attachment or {}))


class SessionParams(BaseModel):
    model_config = ConfigDict(extra="ignore")
    session_id: str = Field(alias="sessionId", min_length=1)  # pydantic refuses lone surrogates


class PromptParams(SessionParams):
    content_blocks: list[PromptBlock] = Field(alias="contentBlocks", min_length=1)


def params_error(method: str, exc: ValidationError) -> RpcError:
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "params"
    return RpcError(INVALID_PARAMS, f"{method}: invalid params: {where}: {first['msg']}")
