"""`session/rewind` over JSON-RPC (`dsh.client`), against our runtime and the loopback model
server playing the rewind scenario."""

from __future__ import annotations

from pathlib import Path

import pytest

from dsh.client import AsyncHarness, HarnessRpcError
from dsh.testing import OpenAIServer, reply
from tests.plugins.rewind.scenario import PROMPTS, script, tree_hash, workspace
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
