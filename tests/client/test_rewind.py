"""`session/rewind` over JSON-RPC (`dsh.client`), against our runtime and the loopback model
server playing the rewind scenario."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from dsh.client import AsyncHarness, Harness, HarnessRpcError
from dsh.testing import OpenAIServer, reply
from tests.plugins.rewind.scenario import PROMPTS, bash, script, tree_hash, workspace
from tests.server.test_jsonrpc_e2e import env_for

SID = "session-rewound"


async def test_rewind_over_json_rpc(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    async with OpenAIServer([*script(), reply("again")]) as server:
        env = env_for(tmp_path, server.base_url)
        async with AsyncHarness(
            provider="deepseek-official", model="fake", cwd=str(ws), env=env
        ) as h:
            before = []
            for prompt in PROMPTS:
                before.append(tree_hash(ws))
                await h.run(prompt, session_id=SID)
            final = tree_hash(ws)
            dry = await h.rewind(SID, 2, mode="code", dry_run=True)
            assert dry["dryRun"] is True and tree_hash(ws) == final
            assert {"status": "A", "path": "gone.txt"} in dry["restored"]  # type: ignore[operator]
            done = await h.rewind(SID, 2)
            assert done["kept"] == [] and isinstance(done["toSeq"], int)
            assert tree_hash(ws) == before[1]
            await h.run("instead", session_id=SID)
            undone = await h.rewind(SID, undo=True)
            assert undone["undo"] == done["id"]
            assert tree_hash(ws) == final
            with pytest.raises(HarnessRpcError, match="has no prompt 9"):
                await h.rewind(SID, 9)
    sent = server.requests[-1].body["messages"]
    users = [m["content"] for m in sent if m["role"] == "user"]
    assert [u for u in users if u in (*PROMPTS, "instead")] == [PROMPTS[0], "instead"]


async def test_the_sync_harness_rewinds(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    async with OpenAIServer([reply(bash("printf 'bee\\n' > b.txt")), "made"]) as server:

        def drive() -> dict[str, object]:
            env = env_for(tmp_path, server.base_url)
            with Harness(provider="deepseek-official", model="m", cwd=str(ws), env=env) as h:
                h.run("make b.txt", session_id=SID)
                assert (ws / "b.txt").exists()
                return h.rewind(SID, 1, mode="code")

        report = await asyncio.to_thread(drive)
    assert report["restored"] == [{"status": "D", "path": "b.txt"}]
    assert not (ws / "b.txt").exists()
