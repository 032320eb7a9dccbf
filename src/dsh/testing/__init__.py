"""Public test helpers: a scripted model at the model boundary."""

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
    "Part",
    "Reasoning",
    "Reply",
    "ScriptedModel",
    "ToolCall",
    "crash",
    "failure",
    "reasoning",
    "reply",
    "tool_call",
]
