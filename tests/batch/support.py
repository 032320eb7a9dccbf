"""What the batch tests share: tasks files, and a loopback model that answers every task of a
batch in any order (a few tool steps, then an answer naming the task)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dsh.llm import TokenUsage
from dsh.persistence import StoredSessions
from dsh.plugins.invariants import LogState, check_event
from dsh.session import SessionEvent
from dsh.testing import OpenAIServer, RecordedRequest, Reply, reply, tool_call

USAGE = TokenUsage(input_tokens=10, output_tokens=5)


def write_tasks(folder: Path, count: int) -> Path:
    (folder / "notes.txt").write_text("the tulip is red\n")
    path = folder / "tasks.jsonl"
    lines = [
        json.dumps({"id": f"t{n}", "prompt": f"task t{n}: read notes.txt"}) for n in range(count)
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def task_of(request: RecordedRequest) -> str:
    first = next(m for m in request.body["messages"] if m["role"] == "user")
    text = first["content"] if isinstance(first["content"], str) else first["content"][0]["text"]
    match = re.match(r"task (\S+):", text)
    assert match is not None, text
    return match[1]


def agent_step(steps: int) -> Callable[[RecordedRequest], Reply]:
    """`steps` tool calls (read notes.txt), then the answer `done <task id>`."""

    def answer(request: RecordedRequest) -> Reply:
        done = sum(1 for m in request.body["messages"] if m["role"] == "tool")
        if done < steps:
            return reply(tool_call("read", {"file_path": "notes.txt"}), usage=USAGE)
        return reply(f"done {task_of(request)}", usage=USAGE)

    return answer


def model_server(steps: int, requests: int = 10_000) -> OpenAIServer:
    return OpenAIServer([agent_step(steps)] * requests)


def read_results(path: Path) -> dict[str, dict[str, Any]]:
    return {r["id"]: r for r in map(json.loads, path.read_text().splitlines())}


async def log_problems(store: StoredSessions, session_id: str) -> list[str]:
    """The invariant violations of a stored log (empty when it is well-formed)."""
    log = await store.inspect(session_id)
    state = LogState()
    return [p for e in log.events for p in check_event(state, e)] + (
        ["open turn: needs repair"] if log.repair else []
    )


def types(events: tuple[SessionEvent, ...]) -> list[str]:
    return [e.type for e in events]
