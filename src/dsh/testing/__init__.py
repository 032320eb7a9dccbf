"""Public test helpers: a scripted model at the model boundary, a loopback OpenAI-compatible
HTTP server that plays the same scripts over the wire, and waits for lifecycle points."""

from ._openai_server import OpenAIServer, RecordedRequest, ServerEntry
from ._openai_wire import HttpError, Malformed, http_error, malformed
from ._postgres import PostgresServer, PostgresUnavailableError
from ._prefix_cache import CacheMeasure, PrefixCache
from ._script import (
    Crash,
    Entry,
    Failure,
    Hold,
    Part,
    Reasoning,
    Reply,
    ToolCall,
    crash,
    failure,
    hold,
    reasoning,
    reply,
    tool_call,
)
from ._scripted import ScriptedModel
from ._waits import until, wait_all_tasks_blocked

__all__ = [
    "CacheMeasure",
    "Crash",
    "Entry",
    "Failure",
    "Hold",
    "HttpError",
    "Malformed",
    "OpenAIServer",
    "Part",
    "PostgresServer",
    "PostgresUnavailableError",
    "PrefixCache",
    "Reasoning",
    "RecordedRequest",
    "Reply",
    "ScriptedModel",
    "ServerEntry",
    "ToolCall",
    "crash",
    "failure",
    "hold",
    "http_error",
    "malformed",
    "reasoning",
    "reply",
    "tool_call",
    "until",
    "wait_all_tasks_blocked",
]
