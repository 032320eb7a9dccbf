"""Replay a stored session (by id, by file, or as a log) and compare it with its recording."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

import msgspec

from ..llm import Json
from ..persistence import StoredLog
from ._recording import load_log, recording_of
from ._report import ReplayReport, compare
from ._run import ToolsMode, play
from ._views import RequestView, ToolView, request_views, tool_views

if TYPE_CHECKING:
    from ..persistence import SessionPersistence

__all__ = ["replay", "replay_async", "replay_log", "replay_stored"]


async def replay_log(
    log: StoredLog,
    *,
    tools: ToolsMode = "recorded",
    profiles: Sequence[str | os.PathLike[str]] = (),
    workspace: str | os.PathLike[str] | None = None,
    source: str | None = None,
) -> ReplayReport:
    """Replay `log` through today's code (its recorded answers as the model, over the
    loopback server) and report where it diverged. `tools`: `recorded` serves each call its
    recorded result, `rerun` runs the tools in a scratch copy of `workspace` (default: the
    session's folder). `profiles` are layered over the default profile, as `dsh run`'s."""
    recording = recording_of(log.header, log.events)
    if not recording.answers:  # every request failed (a bad key, no server, a cancel)
        nothing = ("no model request of it was answered: nothing to replay",)
        return ReplayReport(log.header.id, source or log.header.id, tools, 0, 0, None, (), nothing)
    played = await play(recording, tools=tools, profiles=profiles, workspace=workspace)
    cwd = log.header.cwd or ""
    recorded = request_views(log.header, log.events)
    replayed = [
        _request(v, played.workspace, cwd) for v in request_views(log.header, played.events)
    ]
    recorded_tools = tool_views(log.events)
    replayed_tools = [_tool(v, played.workspace, cwd) for v in tool_views(played.events)]
    request, calls = compare(recorded, replayed, recorded_tools, replayed_tools)
    return ReplayReport(
        log.header.id,
        source or log.header.id,
        tools,
        len(recorded),
        len(replayed),
        request,
        calls,
        played.notes,
    )


def _moved(value: Json, scratch: str, cwd: str) -> Json:
    """`value` with the replay's folder written as the recorded one (a rerun works in a
    copy, an empty stand-in replaces a folder that is gone)."""
    if not cwd or scratch == cwd:
        return value
    raw = json.dumps(value, ensure_ascii=False)
    old, new = json.dumps(scratch)[1:-1], json.dumps(cwd)[1:-1]
    return value if old not in raw else json.loads(raw.replace(old, new))


def _request(view: RequestView, scratch: str, cwd: str) -> RequestView:
    body = _moved(view.body, scratch, cwd)
    assert isinstance(body, dict)
    return msgspec.structs.replace(view, body=body)


def _tool(view: ToolView, scratch: str, cwd: str) -> ToolView:
    return msgspec.structs.replace(view, result=_moved(view.result, scratch, cwd))


async def replay_async(
    path: str | os.PathLike[str],
    *,
    tools: ToolsMode = "recorded",
    profiles: Sequence[str | os.PathLike[str]] = (),
    workspace: str | os.PathLike[str] | None = None,
) -> ReplayReport:
    """Replay the session log file at `path` (or the folder holding it)."""
    log = await load_log(path)
    return await replay_log(
        log, tools=tools, profiles=profiles, workspace=workspace, source=str(path)
    )


def replay(
    path: str | os.PathLike[str],
    *,
    tools: ToolsMode = "recorded",
    profiles: Sequence[str | os.PathLike[str]] = (),
    workspace: str | os.PathLike[str] | None = None,
) -> ReplayReport:
    """`replay_async` in a new event loop (from a test without one; inside a running loop
    `await replay_async(...)` instead)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(replay_async(path, tools=tools, profiles=profiles, workspace=workspace))
    raise RuntimeError("replay() runs its own event loop: await replay_async(...) inside one")


async def replay_stored(
    persistence: SessionPersistence,
    session_id: str,
    *,
    tools: ToolsMode = "recorded",
    profiles: Sequence[str | os.PathLike[str]] = (),
    workspace: str | os.PathLike[str] | None = None,
) -> ReplayReport:
    """Replay the stored session `session_id` (its crash-repair closers appended, nothing
    written to it)."""
    log = await persistence.inspect(session_id)  # its events end with the proposed closers
    return await replay_log(log, tools=tools, profiles=profiles, workspace=workspace)
