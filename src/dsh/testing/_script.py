"""The script vocabulary of `ScriptedModel`: replies and the parts they stream."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator, Mapping
from typing import TypeAlias

import msgspec

from ..llm import (
    BlockEnd,
    BlockStart,
    Finish,
    FinishReason,
    GenerateOptions,
    Json,
    LlmFailure,
    ReasoningBlock,
    ReasoningDelta,
    StreamChunk,
    TextBlock,
    TextDelta,
    TokenUsage,
    ToolCallBlock,
    ToolCallDelta,
    UsageChunk,
    aborted_finish,
    error_finish,
)

__all__ = [
    "Crash",
    "Entry",
    "Failure",
    "Hold",
    "Part",
    "Reasoning",
    "Reply",
    "ToolCall",
    "crash",
    "failure",
    "hold",
    "reasoning",
    "reply",
    "tool_call",
]


class Reasoning(msgspec.Struct, frozen=True):
    text: str


class ToolCall(msgspec.Struct, frozen=True):
    name: str
    arguments: str
    id: str | None = None


class Failure(msgspec.Struct, frozen=True):
    """Ends the reply with `finish error` carrying `failure` (an in-band provider failure)."""

    failure: LlmFailure


class Crash(msgspec.Struct, frozen=True):
    """Makes the adapter raise `error` at this point of the stream."""

    error: Exception


class Hold:
    """A point in a reply where the stream stays open until `release()` (or the request's
    signal fires: the stream then finishes `aborted`). Build it with `hold()`.

    `await held.reached()` returns once a stream has delivered every part before the hold
    and waits at it, so a test knows the model call is open without sleeping.
    """

    __slots__ = ("_reached", "_released")

    def __init__(self) -> None:
        self._reached = asyncio.Event()
        self._released = asyncio.Event()

    @property
    def is_reached(self) -> bool:
        return self._reached.is_set()

    @property
    def is_released(self) -> bool:
        return self._released.is_set()

    async def reached(self) -> None:
        """Wait until a stream waits at this hold."""
        await self._reached.wait()

    def release(self) -> None:
        """Let the stream go on past this hold (at once if it has not arrived yet)."""
        self._released.set()

    async def _pass(self) -> None:
        """The players' side (`ScriptedModel`, `OpenAIServer`): arrive, wait for the release."""
        self._reached.set()
        await self._released.wait()

    def __repr__(self) -> str:
        state = "released" if self.is_released else "reached" if self.is_reached else "waiting"
        return f"<Hold {state}>"


Part: TypeAlias = str | Reasoning | ToolCall | Failure | Crash | Hold
"""A plain string is a text block."""


def reasoning(text: str) -> Reasoning:
    """A reasoning block."""
    return Reasoning(text)


def tool_call(
    name: str, arguments: Mapping[str, Json] | str = "{}", *, id: str | None = None
) -> ToolCall:
    """A tool call; a mapping of arguments is JSON-encoded. Ids default to `call_1`, `call_2`, …
    (counted per model)."""
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return ToolCall(name, raw, id)


def failure(
    code: str,
    message: str | None = None,
    *,
    status: int | None = None,
    retry_after_ms: int | None = None,
    request_id: str | None = None,
) -> Failure:
    """End the reply with `finish error` (after any parts before it)."""
    return Failure(
        LlmFailure(message or f"scripted {code} failure", code, status, retry_after_ms, request_id)
    )


def hold() -> Hold:
    """A point where the reply's stream waits, open, until `release()`d."""
    return Hold()


def crash(error: Exception | str) -> Crash:
    """Make the adapter raise at this point (a string becomes a `RuntimeError`)."""
    return Crash(RuntimeError(error) if isinstance(error, str) else error)


_FINISH_KINDS = ("stop", "tool-calls", "max-tokens", "error", "aborted")


class Reply(msgspec.Struct, frozen=True):
    """One scripted response. Build it with `reply(...)`."""

    parts: tuple[Part, ...]
    usage: TokenUsage | None = None
    finish: str | None = None
    delay: float = 0.0
    expect: Callable[[GenerateOptions], object] | None = None
    hang: bool = False
    replay_state: Json = None
    piece_chars: int | None = None
    """Stream text and reasoning in pieces of this many characters (token by token, with
    `delay` before each) instead of three pieces."""

    def pieces(self, text: str) -> list[str]:
        return _pieces(text, size=self.piece_chars)

    def render(
        self, call_ids: Iterator[str]
    ) -> tuple[list[StreamChunk | Crash | Hold], list[StreamChunk]]:
        """The body chunks (a `Crash` marks where to raise, a `Hold` where to wait) and the
        tail (usage, finish)."""
        body: list[StreamChunk | Crash | Hold] = []
        ending: Failure | None = None
        has_calls = False
        index = 0
        for part in self.parts:
            if isinstance(part, Crash):
                body.append(part)
                return body, []
            if isinstance(part, Failure):
                ending = part
                break
            if isinstance(part, Hold):
                body.append(part)
                continue
            if isinstance(part, str):
                body.append(BlockStart(index, "text"))
                body.extend(TextDelta(index, piece) for piece in self.pieces(part))
                body.append(BlockEnd(index, TextBlock(part)))
            elif isinstance(part, Reasoning):
                body.append(BlockStart(index, "reasoning"))
                body.extend(ReasoningDelta(index, piece) for piece in self.pieces(part.text))
                body.append(BlockEnd(index, ReasoningBlock(part.text)))
            else:
                has_calls = True
                call_id = part.id or next(call_ids)
                body.append(BlockStart(index, "tool-call"))
                pieces = _pieces(part.arguments) or [""]
                for i, piece in enumerate(pieces):
                    body.append(ToolCallDelta(index, call_id, piece, part.name if i == 0 else None))
                body.append(BlockEnd(index, ToolCallBlock(call_id, part.name, part.arguments)))
            index += 1
        tail: list[StreamChunk] = []
        if self.usage is not None:
            tail.append(UsageChunk(self.usage))
        tail.append(Finish(self._reason(ending, has_calls), self.replay_state))
        return body, tail

    def _reason(self, ending: Failure | None, has_calls: bool) -> FinishReason:
        if ending is not None:
            return error_finish(ending.failure)
        if self.finish == "error":
            return error_finish(LlmFailure("scripted error", "UNKNOWN"))
        if self.finish == "aborted":
            return aborted_finish()
        if self.finish is not None:
            return FinishReason(self.finish)
        return FinishReason("tool-calls" if has_calls else "stop")


Entry: TypeAlias = Reply | str | Callable[[GenerateOptions], Reply | str]
"""A script entry: a reply, a plain text reply, or a function of the request returning one."""


def reply(
    *parts: Part,
    usage: TokenUsage | None = None,
    finish: str | None = None,
    delay: float = 0.0,
    expect: Callable[[GenerateOptions], object] | None = None,
    hang: bool = False,
    replay_state: Json = None,
    piece_chars: int | None = None,
) -> Reply:
    """One scripted response, streamed as realistic chunks.

    - `parts`: text (`str`), `reasoning(…)`, `tool_call(…)`, `hold()` points where the
      stream waits until released, then optionally one final `failure(…)` (finish `error`)
      or `crash(…)` (the adapter raises).
    - `finish`: override the finish kind (default `tool-calls` if any call, else `stop`).
    - `delay`: seconds awaited before each chunk; the request signal interrupts it.
    - `expect(options)`: checks the request; raising (or returning False) records a mismatch
      reported by `assert_complete()` and fails the stream with code `SCRIPT_EXPECTATION`.
    - `hang`: after the body, stream nothing until the request signal fires.
    - `piece_chars`: stream text and reasoning this many characters at a time (with
      `delay`, a model typing token by token); default: three pieces per block.
    """
    for i, part in enumerate(parts):
        if isinstance(part, Failure | Crash) and i != len(parts) - 1:
            raise ValueError(f"{type(part).__name__.lower()}(...) must be the last part of a reply")
        if not isinstance(part, str | Reasoning | ToolCall | Failure | Crash | Hold):
            raise TypeError(f"not a reply part: {part!r}")
    if finish is not None and finish not in _FINISH_KINDS:
        raise ValueError(f"finish must be one of {', '.join(_FINISH_KINDS)}, not {finish!r}")
    if delay < 0:
        raise ValueError("delay must be >= 0")
    if piece_chars is not None and piece_chars < 1:
        raise ValueError("piece_chars must be >= 1")
    return Reply(tuple(parts), usage, finish, delay, expect, hang, replay_state, piece_chars)


def _pieces(text: str, count: int = 3, size: int | None = None) -> list[str]:
    """`text` in up to `count` consecutive non-empty pieces (or pieces of `size`
    characters), like a streamed response."""
    if not text:
        return []
    size = size or -(-len(text) // count)
    return [text[i : i + size] for i in range(0, len(text), size)]
