"""A stored session read as something to play again: the prompts it was given, the answers
its model gave (as loopback server replies), its tools' results, its route and sandbox."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

import msgspec

from ..event_types import ASSISTANT_CHUNK, SANDBOX_MODE, STEP_START, TURN_START
from ..events import (
    AssistantMessageEvent,
    RequestContextEvent,
    RequestHeaderEvent,
    SandboxModeEvent,
    UserMessageEvent,
    typed_as,
)
from ..llm import Message, ReasoningBlock, TextBlock, ToolCallBlock
from ..persistence import JsonlBackend, StoredLog, StoredSessions
from ..plugins.ask_user import ask_user_question
from ..session import SessionEvent, SessionHeader
from ..testing import Part, Reply, reasoning, reply, tool_call
from ._effects import plan_modes
from ._rewinds import Rewind, rewinds_of
from ._views import answered

__all__ = ["Prompt", "Recording", "ReplayError", "load_log", "log_header", "recording_of"]


class ReplayError(Exception):
    """A session that cannot be replayed (a file that is no session log, a workspace that is
    gone), named in one line."""


class Prompt(msgspec.Struct, frozen=True):
    """A user's message as the log received it: in turn `turn`, claimed at step `step`."""

    turn: int
    step: int
    message: Message


class Recording(msgspec.Struct, frozen=True):
    """What a replay plays: `answers[i]` answers the session's request `i + 1`."""

    header: SessionHeader
    events: tuple[SessionEvent, ...]
    prompts: tuple[Prompt, ...]
    answers: tuple[Reply, ...]
    answer_steps: tuple[tuple[int, int], ...]
    """(turn, step) of each answer."""
    provider: str | None
    model: str | None
    sandbox: str | None
    rewinds: tuple[Rewind, ...] = ()
    """The rewinds done between its turns (a replay does them again)."""
    asks: bool = False
    """Its first request offered `ask_user_question`: someone could answer (a chat, a web
    page), so the replay has an answerer too."""
    plan_modes: tuple[tuple[int, bool], ...] = ()
    """Plan mode set between its turns: (turns begun before, on or off)."""


def recording_of(header: SessionHeader, events: Sequence[SessionEvent]) -> Recording:
    """What a replay of `events` plays: the users' messages by turn and step, each answered
    `assistant/message` as a reply, the first route and the sandbox mode the log names."""
    prompts: list[Prompt] = []
    answers: list[Reply] = []
    steps: list[tuple[int, int]] = []
    route: RequestContextEvent | None = None
    sandbox: str | None = None
    asks: bool | None = None
    turn = step = 0
    for event in events:
        if asks is None and (header_event := typed_as(event, RequestHeaderEvent)) is not None:
            asks = any(t.name == ask_user_question.name for t in header_event.header.tools)
        if event.type == TURN_START:
            turn, step = int(str(event.data.get("turn", turn + 1))), 0
        elif event.type == STEP_START:
            step = int(str(event.data.get("step", step + 1)))
        elif event.type == SANDBOX_MODE and sandbox is None:
            mode = typed_as(event, SandboxModeEvent)
            sandbox = None if mode is None else mode.mode
        elif route is None and (context := typed_as(event, RequestContextEvent)) is not None:
            route = context
        elif (prompt := typed_as(event, UserMessageEvent)) is not None:
            if prompt.source_kind == "user":
                prompts.append(Prompt(turn, step, prompt.message))
        elif answered(event) and (answer := typed_as(event, AssistantMessageEvent)) is not None:
            answers.append(_reply(answer, event, events))
            steps.append((answer.turn, answer.step))
    return Recording(
        header,
        tuple(events),
        tuple(prompts),
        tuple(answers),
        tuple(steps),
        None if route is None else route.provider,
        None if route is None else route.model,
        sandbox,
        rewinds_of(events),
        bool(asks),
        plan_modes(events),
    )


def _reply(
    answer: AssistantMessageEvent, event: SessionEvent, events: Sequence[SessionEvent]
) -> Reply:
    """The recorded answer as a loopback server reply: its blocks (tool call ids kept), its
    usage, and its finish when it was not the default one (a `max-tokens` cut)."""
    parts: list[Part] = []
    for block in answer.message.content:
        if isinstance(block, TextBlock) and block.text:
            parts.append(block.text)
        elif isinstance(block, ReasoningBlock):
            parts.append(reasoning(block.text))
        elif isinstance(block, ToolCallBlock):
            parts.append(tool_call(block.name, block.arguments, id=block.id))
    finish = _finish(event, events)
    return reply(*parts, usage=answer.usage, finish=finish if finish == "max-tokens" else None)


def _finish(event: SessionEvent, events: Sequence[SessionEvent]) -> str | None:
    seqs = event.source_event_seqs or ()
    if not seqs or not 0 <= seqs[-1] < len(events):
        return None
    last = events[seqs[-1]]
    chunk = last.data.get("chunk") if last.type == ASSISTANT_CHUNK else None
    if isinstance(chunk, dict) and chunk.get("type") == "finish":
        reason = chunk.get("reason")
        kind = reason.get("kind") if isinstance(reason, dict) else None
        return kind if isinstance(kind, str) else None
    return None


async def load_log(path: str | os.PathLike[str], *, repair: bool = True) -> StoredLog:
    """A session log file (`session.jsonl`, `session.v4.jsonl`, compressed or not; or the
    folder holding it) read as the session store reads it: the reference runtime's logs
    too, a torn or unfinished one with its crash-repair closers appended (`repair=False`:
    left open, as stored)."""
    with tempfile.TemporaryDirectory(prefix="dsh-replay-load-") as root:
        backend = JsonlBackend(Path(root))
        header = await asyncio.to_thread(_stage, Path(path), backend)
        log = await StoredSessions(backend).inspect(header.id)
    # `inspect` ends `events` with the closers it proposes (also held in `repair`).
    kept = log.events if repair else log.events[: len(log.events) - len(log.repair)]
    return msgspec.structs.replace(log, events=kept, repair=())


def _stage(source: Path, backend: JsonlBackend) -> SessionHeader:
    """Copy the log at `source` where `backend` looks for it; its header."""
    if source.is_dir():
        found = sorted(source.glob("session*.jsonl*"))
        if not found:
            raise ReplayError(f"{source}: no session*.jsonl log in this folder")
        source = found[0]
    header = log_header(source)
    target = backend.locate(header).path  # a file of another name (a kept copy) goes here too
    name = "session.v4.jsonl" if header.version == 4 else "session.jsonl"
    target.parent.mkdir(parents=True)
    shutil.copyfile(source, target.with_name(name + (".zstd" if source.suffix == ".zstd" else "")))
    return header


def log_header(source: Path) -> SessionHeader:
    """The header line of a session log file (a `ReplayError` when it is none)."""
    try:
        if source.name.endswith(".zstd"):
            import zstandard

            with zstandard.open(source, "rt", encoding="utf-8") as text:
                first = text.readline()
        else:
            with source.open(encoding="utf-8") as text:
                first = text.readline()
        return SessionHeader.from_json(json.loads(first))
    except (OSError, ValueError, UnicodeDecodeError, ImportError) as exc:
        raise ReplayError(f"{source}: not a session log ({exc})") from None
