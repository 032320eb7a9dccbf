"""Public test helpers: a scripted model at the model boundary, a loopback OpenAI-compatible
HTTP server that plays the same scripts over the wire, waits for lifecycle points, and
`replay` (a stored session run again through today's code: `dsh.replay`)."""

from typing import Any

from .._lazy import lazy_attribute
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

# `dsh.replay`'s helpers, loaded when first named: a replay boots a whole runtime and plays
# its answers on `OpenAIServer`, so `dsh.replay` imports this package, not the reverse.
_LAZY = {"ReplayReport": "dsh.replay", "replay": "dsh.replay", "replay_async": "dsh.replay"}


def __getattr__(name: str) -> Any:
    return lazy_attribute(__name__, name, _LAZY)


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
    "ReplayReport",
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
    "replay",
    "replay_async",
    "reply",
    "tool_call",
    "until",
    "wait_all_tasks_blocked",
]
