"""Public test helpers: a scripted model at the model boundary, and a loopback
OpenAI-compatible HTTP server that plays the same scripts over the wire."""

from ._openai_server import OpenAIServer, RecordedRequest, ServerEntry
from ._openai_wire import HttpError, Malformed, http_error, malformed
from ._postgres import PostgresServer, PostgresUnavailableError
from ._script import (
    Crash,
    Entry,
    Failure,
    Part,
    Reasoning,
    Reply,
    ToolCall,
    crash,
    failure,
    reasoning,
    reply,
    tool_call,
)
from ._scripted import ScriptedModel

__all__ = [
    "Crash",
    "Entry",
    "Failure",
    "HttpError",
    "Malformed",
    "OpenAIServer",
    "Part",
    "PostgresServer",
    "PostgresUnavailableError",
    "Reasoning",
    "RecordedRequest",
    "Reply",
    "ScriptedModel",
    "ServerEntry",
    "ToolCall",
    "crash",
    "failure",
    "http_error",
    "malformed",
    "reasoning",
    "reply",
    "tool_call",
]
