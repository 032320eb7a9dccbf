"""The replay of `session/load`, in process: logs of other writers (the reference runtime's
CLI, with streamed chunks; its newer JSON-RPC runtime, v4 logs without them) render as the
prompt, every tool call with its final status, and the answer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dsh.acp import Transcript
from dsh.events import typed
from dsh.session import SessionEvent
from tests.conftest import FIXTURES

LOGS = {
    "cli-chunks": FIXTURES / "ts-logs" / "tools3" / "session.jsonl",
    "jsonrpc-v4": next((FIXTURES / "jsonrpc" / "two-tools" / "sessions").rglob("*.jsonl")),
}


def _events(path: Path) -> list[SessionEvent]:
    rows = [json.loads(line) for line in path.read_text().splitlines()[1:] if line]
    return [SessionEvent.from_json(row) for row in rows]


@pytest.mark.parametrize("log", sorted(LOGS), ids=str)
def test_a_reference_log_replays_as_the_editor_would_have_seen_it(log: str) -> None:
    events = _events(LOGS[log])
    transcript = Transcript("/workspace", echo=lambda _id: True)
    updates = [u for event in events for u in transcript.updates(typed(event))]
    kinds = [u.session_update for u in updates]
    calls = [e for e in events if e.type == "tool/call"]
    assert kinds[0] == "user_message_chunk"
    assert updates[0].content.text.startswith("Read hello.txt")
    assert kinds.count("tool_call") == len(calls) > 0
    finals = [u.status for u in updates if u.session_update == "tool_call_update"]
    assert finals == ["completed"] * len(calls)
    answer = "".join(u.content.text for u in updates if u.session_update == "agent_message_chunk")
    assert answer.endswith(f"Done after {len(calls)} tool calls.")
    assert kinds.index("agent_message_chunk") > kinds.index("tool_call")
