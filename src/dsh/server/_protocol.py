"""JSON-RPC 2.0 framing: one compact JSON object per line; errors with standard codes."""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ..llm import Json

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603

_ID = re.compile(r'"id"\s*:\s*("(?:[^"\\]|\\.)*"|-?\d+)')


class RpcError(Exception):
    """A handler failure with a JSON-RPC error code."""

    def __init__(self, code: int, message: str, data: Json = None) -> None:
        super().__init__(message)
        self.code = code
        self.data = data


@dataclass(frozen=True, slots=True)
class Request:
    method: str
    params: Json
    id: Json = None
    """None for a notification."""

    @property
    def is_notification(self) -> bool:
        return self.id is None


@dataclass(frozen=True, slots=True)
class Response:
    """The client's answer to a request the server sent (`session/ask-user-question`)."""

    id: Json
    result: Json = None
    error: Json = None


def request(id: str, method: str, params: Json) -> dict[str, Json]:
    return {"jsonrpc": "2.0", "id": id, "method": method, "params": params}


def encode(frame: dict[str, Json]) -> bytes:
    """One frame, as the reference writes it: compact, UTF-8, newline-terminated."""
    return json.dumps(frame, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"


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
    """A request, a response to one of ours, an error frame to send back, or None (a line to
    ignore)."""
    text = line.decode("utf-8", "replace").strip()
    if not text:
        return None
    try:
        frame = json.loads(text)
    except ValueError:
        found = _ID.search(text)
        if found is None:
            return None
        return error(json.loads(found.group(1)), PARSE_ERROR, "parse error: invalid JSON")
    if not isinstance(frame, dict):
        return None
    id = frame.get("id")
    if "method" not in frame:
        if id is None:
            return None
        return Response(id, frame.get("result"), frame.get("error"))
    method = frame["method"]
    if not isinstance(method, str) or (id is not None and not isinstance(id, str | int)):
        return error(id if isinstance(id, str | int) else None, INVALID_REQUEST, "invalid request")
    return Request(method, frame.get("params"), id)


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


class PromptParams(BaseModel):
    model_config = ConfigDict(extra="ignore")
    session_id: str = Field(alias="sessionId", min_length=1)
    content_blocks: list[dict[str, Any]] = Field(alias="contentBlocks", min_length=1)


class SessionParams(BaseModel):
    model_config = ConfigDict(extra="ignore")
    session_id: str = Field(alias="sessionId", min_length=1)


def params_error(method: str, exc: ValidationError) -> RpcError:
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "params"
    return RpcError(INVALID_PARAMS, f"{method}: invalid params: {where}: {first['msg']}")
