"""The live events: seen while something runs, never logged (the log's outcome holds what
they showed)."""

from __future__ import annotations

from typing import ClassVar, TypeAlias

import msgspec

from ..event_types import TOOL_PROGRESS
from ..llm import Json
from ._catalog import TypedEvent

__all__ = ["StreamEvent", "ToolProgressEvent"]


class ToolProgressEvent(msgspec.Struct, frozen=True, kw_only=True):
    """What a running tool call showed since its previous progress event: new `output` (a
    command's stdout and stderr as they come, at most the last few KiB of the window;
    `skipped` counts the characters left out before it) and/or a status `message` with an
    optional `fraction` done (0..1). Coalesced: a call sends a few of these a second at
    most. Not logged: the call's `tool/result` holds its whole output."""

    type: ClassVar[str] = TOOL_PROGRESS
    call_id: str
    name: str
    """The tool's name."""
    elapsed_ms: int
    """Since the call's dispatch."""
    output: str = ""
    skipped: int = 0
    message: str | None = None
    fraction: float | None = None
    time: int = 0
    """Epoch milliseconds."""

    def to_json(self) -> dict[str, Json]:
        """The camelCase wire shape (JSON-RPC, the web UI): `{type, callId, name, elapsedMs,
        output, skipped?, message?, fraction?, time}`."""
        out: dict[str, Json] = {
            "type": self.type,
            "callId": self.call_id,
            "name": self.name,
            "elapsedMs": self.elapsed_ms,
            "output": self.output,
        }
        if self.skipped:
            out["skipped"] = self.skipped
        if self.message is not None:
            out["message"] = self.message
        if self.fraction is not None:
            out["fraction"] = self.fraction
        out["time"] = self.time
        return out

    @staticmethod
    def from_json(data: dict[str, Json]) -> ToolProgressEvent:
        """The event of a `to_json` object (raises KeyError/TypeError for another shape)."""
        message, fraction = data.get("message"), data.get("fraction")
        return ToolProgressEvent(
            call_id=str(data["callId"]),
            name=str(data["name"]),
            elapsed_ms=int(_number(data["elapsedMs"])),
            output=str(data.get("output", "")),
            skipped=int(_number(data.get("skipped", 0))),
            message=None if message is None else str(message),
            fraction=None if fraction is None else float(_number(fraction)),
            time=int(_number(data.get("time", 0))),
        )


StreamEvent: TypeAlias = TypedEvent | ToolProgressEvent
"""What a live stream of a session yields (`run_stream().events()`,
`session_events(..., typed=True, progress=True)`): its typed log events and the progress of
its running tool calls."""


def _number(value: Json) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"expected a number, got {value!r}")
    return value
