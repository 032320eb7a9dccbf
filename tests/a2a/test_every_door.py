"""One session, every door: started by `dsh run` in the terminal, continued by an A2A client
in `dsh web`, then in an editor over ACP — with the web UI's event stream open from the
start to the end, showing one coherent log."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
from acp import text_block

from dsh.testing import OpenAIServer
from tests.acp.support import Recorder, acp_agent
from tests.cli.support import loopback_env, run_dsh, workspace

from .support import TOKEN, a2a_client, collect, dsh_web, request


class Watcher:
    """The page's view: the session's event stream, read from its first event on."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []
        self.changed = asyncio.Condition()

    async def watch(self, http: httpx.AsyncClient, session_id: str) -> None:
        url = f"/api/sessions/{session_id}/events"
        async with http.stream("GET", url) as stream:
            event = ""
            async for line in stream.aiter_lines():
                if line.startswith("event: "):
                    event = line.removeprefix("event: ")
                elif line.startswith("data: "):
                    row = json.loads(line.removeprefix("data: "))
                    async with self.changed:
                        self.rows.append({"state": row["live"]} if event == "state" else row)
                        self.changed.notify_all()
                    event = ""

    async def until(self, count: int, kind: str) -> None:
        """Until the stream has shown `count` events of type `kind` (or states)."""

        def seen() -> bool:
            found = [r for r in self.rows if r.get("type", "state" if "state" in r else "") == kind]
            return len(found) >= count

        async with self.changed:
            await asyncio.wait_for(self.changed.wait_for(seen), 120)

    def texts(self, kind: str) -> list[str]:
        rows = [r for r in self.rows if r.get("type") == kind]
        if kind == "AssistantMessageEvent":
            return ["".join(b["text"] for b in r["blocks"] if b["kind"] == "text") for r in rows]
        return [r["text"] for r in rows]


async def test_one_session_every_door(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    script = ["From the terminal.", "From A2A.", "From the editor."]
    async with OpenAIServer(script) as server:
        env = loopback_env(tmp_path, server.base_url)
        # 1. the terminal
        run = ["run", "--output-format", "json", "--cwd", str(ws), "Hello from the terminal"]
        code, out, _ = await run_dsh(env, *run)
        assert code == 0
        session_id = json.loads(out.splitlines()[0])["session_id"]
        watcher = Watcher()
        async with (
            dsh_web(tmp_path, env) as base,
            httpx.AsyncClient(base_url=base, headers={"authorization": f"Bearer {TOKEN}"}) as http,
        ):
            watching = asyncio.create_task(watcher.watch(http, session_id))
            await watcher.until(1, "TurnEndEvent")  # the stored log, shown
            # 2. an A2A client continues it: the web UI opens the session, the page sees it live
            async with a2a_client(base, streaming=False) as client:
                (answered,) = await collect(
                    client, request("Hello from A2A", context_id=session_id)
                )
            assert answered.task.context_id == session_id
            await watcher.until(2, "TurnEndEvent")
            # 3. released here, the editor loads it over ACP and prompts
            assert (
                await http.post(f"/api/sessions/{session_id}/release", json={})
            ).status_code == 200
            await watcher.until(3, "state")  # stored, live, stored again
            editor = Recorder()
            async with acp_agent(tmp_path, server.base_url, editor) as (conn, _process):
                await conn.load_session(cwd=str(ws), session_id=session_id, mcp_servers=[])
                prompt = [text_block("Hello from the editor")]
                done = await conn.prompt(session_id=session_id, prompt=prompt)
                assert done.stop_reason == "end_turn"
            # 4. opened here again, the same stream goes on with what the editor wrote
            assert (
                await http.post(f"/api/sessions/{session_id}/resume", json={})
            ).status_code == 200
            await watcher.until(3, "TurnEndEvent")
            watching.cancel()
    prompts = watcher.texts("UserMessageEvent")
    assert prompts == ["Hello from the terminal", "Hello from A2A", "Hello from the editor"]
    assert watcher.texts("AssistantMessageEvent") == script
    seqs = [r["seq"] for r in watcher.rows if "seq" in r]
    assert seqs == sorted(set(seqs))  # in log order, nothing twice
    states = [r["state"] for r in watcher.rows if "state" in r]
    assert states == [False, True, False, True]
