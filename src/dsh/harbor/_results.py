"""What a finished run left in the agent's logs folder, read on the Harbor side: the token
figures of the `result` line, and the session logs as an ATIF trajectory."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import msgspec

from ..llm import Json
from ._commands import SESSIONS_DIR, STDOUT_FILE

__all__ = ["RunFigures", "read_figures", "read_trajectory", "with_subagents"]


class RunFigures(msgspec.Struct, frozen=True):
    """Harbor's `AgentContext` figures: input counts cache reads and writes, as Harbor's
    does; `cost_usd` is None when the model has no price in dsh."""

    session_id: str | None
    n_input_tokens: int
    n_cache_tokens: int
    n_output_tokens: int
    cost_usd: float | None
    finish_reason: str | None


def _lines(path: Path) -> list[dict[str, Any]]:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    out = []
    for line in text.splitlines():
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            out.append(value)
    return out


def _int(usage: Mapping[str, Any], key: str) -> int:
    value = usage.get(key)
    return value if isinstance(value, int) else 0


def session_of(logs_dir: Path) -> str | None:
    """The run's session id, from its `stream-json` lines (the `init` line comes first)."""
    for line in _lines(logs_dir / STDOUT_FILE):
        if isinstance(line.get("session_id"), str):
            return str(line["session_id"])
    return None


def read_figures(logs_dir: Path) -> RunFigures | None:
    """The figures of the last `result` line of the run's output; None without one (the run
    was killed, e.g. by Harbor's timeout)."""
    result = next(
        (line for line in reversed(_lines(logs_dir / STDOUT_FILE)) if line.get("type") == "result"),
        None,
    )
    if result is None:
        return None
    usage = result.get("usage") if isinstance(result.get("usage"), dict) else {}
    assert isinstance(usage, dict)
    cache_read = _int(usage, "cache_read_input_tokens")
    fresh = _int(usage, "input_tokens") + _int(usage, "cache_creation_input_tokens")
    cost = result.get("total_cost_usd")
    reason = result.get("finish_reason")
    return RunFigures(
        session_id=result.get("session_id") if isinstance(result.get("session_id"), str) else None,
        n_input_tokens=fresh + cache_read,
        n_cache_tokens=cache_read,
        n_output_tokens=_int(usage, "output_tokens"),
        cost_usd=float(cost) if isinstance(cost, int | float) else None,
        finish_reason=reason if isinstance(reason, str) else None,
    )


def with_subagents(figures: RunFigures, trajectory: Mapping[str, Any]) -> RunFigures:
    """`figures` plus the usage of the subagents embedded in `trajectory`: the `result` line
    counts the top-level session's answers only."""
    n_input, n_cache, n_output, cost = 0, 0, 0, 0.0
    priced = True
    for child in trajectory.get("subagent_trajectories") or ():
        final = child.get("final_metrics") or {}
        n_input += final.get("total_prompt_tokens") or 0
        n_cache += final.get("total_cached_tokens") or 0
        n_output += final.get("total_completion_tokens") or 0
        child_cost = final.get("total_cost_usd")
        if child_cost is None:
            priced = priced and not final.get("total_prompt_tokens")
        else:
            cost += child_cost
    return msgspec.structs.replace(
        figures,
        n_input_tokens=figures.n_input_tokens + n_input,
        n_cache_tokens=figures.n_cache_tokens + n_cache,
        n_output_tokens=figures.n_output_tokens + n_output,
        cost_usd=figures.cost_usd + cost if figures.cost_usd is not None and priced else None,
    )


def read_trajectory(logs_dir: Path, session_id: str | None = None) -> dict[str, Json] | None:
    """The ATIF trajectory of the run's session (its subagents embedded), from the session
    logs under `logs_dir/sessions`; None when there is no log to read.

    Synchronous, for Harbor's `populate_context_post_run`, which runs inside Harbor's event
    loop: the reading runs on a loop of its own in a thread."""
    root = logs_dir / SESSIONS_DIR
    session_id = session_id or session_of(logs_dir)
    if session_id is None or not root.is_dir():
        return None
    found: list[dict[str, Json]] = []
    failed: list[BaseException] = []

    def work() -> None:
        try:
            found.append(asyncio.run(_export(root, session_id)))
        except BaseException as exc:  # reported to the caller's thread
            failed.append(exc)

    thread = threading.Thread(target=work, name="dsh-atif-export")
    thread.start()
    thread.join()
    if failed:
        raise failed[0]
    return found[0]


async def _export(root: Path, session_id: str) -> dict[str, Json]:
    from ..atif import export_session
    from ..persistence import JsonlBackend, StoredSessions

    return await export_session(StoredSessions(JsonlBackend(root)), session_id)
