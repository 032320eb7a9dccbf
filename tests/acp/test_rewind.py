"""`/rewind` in an editor: `dsh acp` advertises it as a slash command and answers it without
calling the model (ACP itself has no rewind method)."""

from __future__ import annotations

from pathlib import Path

from dsh.testing import reply
from tests.plugins.rewind.scenario import bash

from .support import Recorder, live_session


async def test_rewind_as_a_slash_command(tmp_path: Path) -> None:
    script = [reply(bash("printf 'bee\\n' > b.txt")), "Made.", "Again."]
    client = Recorder(answers=["allow_once"])
    async with live_session(tmp_path, script, client) as live:
        sid = live.sid
        offered = await client.until(lambda: client.of(sid, "available_commands_update"))
        assert [c.name for c in offered[-1].available_commands] == ["rewind"]
        await live.prompt("make b.txt")
        ws = tmp_path / "ws"
        assert (ws / "b.txt").read_bytes() == b"bee\n"

        listed = await live.prompt("/rewind")
        assert listed.stop_reason == "end_turn"
        assert "make b.txt" in client.text(sid) and "A b.txt" in client.text(sid)
        await live.prompt("/rewind 1")
        assert not (ws / "b.txt").exists()
        assert "files: D b.txt" in client.text(sid)
        await live.prompt("/rewind undo")
        assert (ws / "b.txt").read_bytes() == b"bee\n"
        await live.prompt("/rewind 1 everything")
        assert "usage: /rewind N [code|conversation|both], or /rewind undo" in client.text(sid)
        requests = len(live.server.requests)
        await live.prompt("and now?")
    assert len(live.server.requests) == requests + 1  # the commands called no model
    sent = live.server.requests[-1].body["messages"]
    users = [m["content"] for m in sent if m["role"] == "user"]
    assert "make b.txt" in users and not any("/rewind" in str(u) for u in users)
