"""`dsh run --output-format json|stream-json`: a run's output in the shapes scripts written for
Claude Code's headless mode already parse.

`json` prints one object when the run ends: `{"type": "result", "subtype", "is_error",
"duration_ms", "num_turns", "result", "session_id", "total_cost_usd", "usage",
"permission_denials"}`. `stream-json` prints one object per line as the run goes: a
`system`/`init` line, each model answer as an `assistant` message (text, `thinking` and
`tool_use` blocks), each tool result as a `user` message (`tool_result` blocks), then the
same `result` object. `num_turns` counts model round trips (dsh's steps), as Claude Code's
does.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from ..agent import Agent, RunResult
from ..events import AssistantMessageEvent, ToolResultEvent, typed
from ..llm import Json, ReasoningBlock, TextBlock, ToolCallBlock
from ..plugins.usage import budget_stop
from ..session import SessionEvent, Usage, usage_by_model, usage_of
from ..tools import ToolExecution
from ._runtime import Pricer

__all__ = ["Headless", "OutputFormat"]

OutputFormat = Literal["text", "json", "stream-json"]


class Headless:
    """One run's `json` or `stream-json` output, written to stdout."""

    def __init__(
        self,
        form: Literal["json", "stream-json"],
        agent: Agent,
        model: str,
        cost: Pricer | None,
        started: float,
    ) -> None:
        self._stream = form == "stream-json"
        self._agent = agent
        self._model = model
        self._cost = cost
        self._started = started
        """`time.monotonic()` when the command started: `duration_ms` counts from there."""

    def start(self, cwd: Path, tools: Sequence[str], permission_mode: str) -> None:
        if self._stream:
            self._write(
                {
                    "type": "system",
                    "subtype": "init",
                    "session_id": self._agent.id,
                    "cwd": str(cwd),
                    "model": self._model,
                    "tools": list(tools),
                    "permissionMode": permission_mode,
                }
            )

    def event(self, event: SessionEvent) -> None:
        """A logged event of the run: its message line, in `stream-json`."""
        if not self._stream:
            return
        match typed(event):
            case AssistantMessageEvent() as answer:
                message: dict[str, Json] = {
                    "id": f"msg-{answer.seq}",
                    "type": "message",
                    "role": "assistant",
                    "model": self._model,
                    "content": [_block(b) for b in answer.message.content if _shown(b)],
                }
                if answer.usage is not None:
                    message["usage"] = _usage(usage_of([event]))
                self._write({"type": "assistant", "message": message, **self._session()})
            case ToolResultEvent() as result:
                block: Json = {
                    "type": "tool_result",
                    "tool_use_id": result.call_id,
                    "content": result.text,
                    "is_error": result.is_error,
                }
                message = {"role": "user", "content": [block]}
                self._write({"type": "user", "message": message, **self._session()})
            case _:
                pass

    def finish(self, result: RunResult | None, denied: Sequence[ToolExecution]) -> None:
        """The `result` object: the run's answer, cost and outcome."""
        usage = result.usage if result is not None else Usage()
        ok = result is not None and result.finish_reason == "completed"
        spent = usage_by_model(result.events) if result is not None else {}
        cost = self._cost(spent) if self._cost is not None else None
        self._write(
            {
                "type": "result",
                "subtype": _subtype(result, ok),
                "is_error": not ok,
                "duration_ms": round((time.monotonic() - self._started) * 1000),
                "num_turns": usage.requests,
                "result": result.text if result is not None else "",
                **self._session(),
                "total_cost_usd": cost,
                "usage": _usage(usage),
                "permission_denials": [
                    {
                        "tool_name": call.name,
                        "tool_use_id": call.call_id,
                        "tool_input": call.arguments,
                    }
                    for call in denied
                ],
                "finish_reason": result.finish_reason if result is not None else "interrupted",
            }
        )

    def _session(self) -> dict[str, Json]:
        return {"session_id": self._agent.id}

    @staticmethod
    def _write(line: dict[str, Json]) -> None:
        sys.stdout.write(json.dumps(line, ensure_ascii=False) + "\n")
        sys.stdout.flush()


def _shown(block: object) -> bool:
    return isinstance(block, TextBlock | ReasoningBlock | ToolCallBlock)


def _block(block: object) -> dict[str, Json]:
    if isinstance(block, TextBlock):
        return {"type": "text", "text": block.text}
    if isinstance(block, ReasoningBlock):
        return {"type": "thinking", "thinking": block.text}
    assert isinstance(block, ToolCallBlock)
    try:
        arguments: Json = json.loads(block.arguments or "{}")
    except ValueError:
        arguments = block.arguments  # what the model wrote, when it is not JSON
    return {"type": "tool_use", "id": block.id, "name": block.name, "input": arguments}


def _usage(usage: Usage) -> dict[str, Json]:
    return {
        "input_tokens": usage.input_tokens,
        "cache_creation_input_tokens": usage.cache_write_tokens,
        "cache_read_input_tokens": usage.cache_read_tokens,
        "output_tokens": usage.output_tokens,
    }


def _subtype(result: RunResult | None, ok: bool) -> str:
    """Claude Code's `subtype`: `success`, `error_max_turns` for a run stopped at
    `--max-steps` (its "turns" are dsh's steps), else `error_during_execution`."""
    if ok:
        return "success"
    stop = budget_stop(result.end_reason) if result is not None else None
    return (
        "error_max_turns"
        if stop is not None and stop.name == "max-steps"
        else ("error_during_execution")
    )
