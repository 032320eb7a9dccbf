"""`-m` on a resumed `dsh run` switches the session's model: a durable `model/switch`, a note
that the cached prefix is re-paid once, and the history carried to the new model."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from dsh.testing import OpenAIServer, http_error

from .support import loopback_env, run_dsh, workspace


async def test_run_continue_with_m_switches_the_model(tmp_path: Path) -> None:
    cwd = workspace(tmp_path)
    async with OpenAIServer(["first answer", "second answer", "third answer"]) as server:
        env = loopback_env(tmp_path, server.base_url)
        base = ("run", "--cwd", str(cwd), "--plain")
        code, _, _ = await run_dsh(env, *base, "-m", "deepseek:deepseek-v4-flash", "one")
        assert code == 0
        code, out, err = await run_dsh(env, *base, "-c", "-m", "deepseek:deepseek-v4-pro", "two")
        assert code == 0 and "second answer" in out
        assert "switched to deepseek-official:deepseek-v4-pro" in err
        assert "re-pays the cached prompt prefix once" in err
        code, _, err = await run_dsh(env, *base, "-c", "three")  # the switch holds
        assert code == 0 and "switched" not in err
    models = [r.body["model"] for r in server.requests]
    assert models == ["deepseek-v4-flash", "deepseek-v4-pro", "deepseek-v4-pro"]
    second = [m["content"] for m in server.requests[1].body["messages"][1:]]
    assert second == ["one", "first answer", "two"]
    [log] = (tmp_path / "sessions").rglob("*.jsonl")
    switches = [json.loads(x) for x in log.read_text().splitlines() if '"model/switch"' in x]
    assert [s["data"]["model"] for s in switches] == ["deepseek-v4-pro"]


async def test_a_fallback_is_one_line_and_the_run_completes(tmp_path: Path) -> None:
    cwd = workspace(tmp_path)
    primary = OpenAIServer([http_error(503), http_error(503)])
    spare = OpenAIServer(["from the spare"])
    async with primary, spare:
        route = {"provider": "spare", "base_url": spare.base_url + "/v1"}
        rows = [
            {"id": "spare", "name": "openai_compat", "config": {"routes": [route]}},
            {"id": "retry", "config": {"max_retries": 1, "base_delay_ms": 1, "max_delay_ms": 2}},
            {"id": "fallback", "config": {"models": ["spare:spare-model"]}},
        ]
        profile = tmp_path / "fallback.yml"
        profile.write_text(yaml.safe_dump(rows))
        env = loopback_env(tmp_path, primary.base_url)
        args = ("run", "--cwd", str(cwd), "--plain", "-p", str(profile), "hello")
        code, out, err = await run_dsh(env, *args)
    assert code == 0 and "from the spare" in out, err
    assert "⇢ deepseek-official:deepseek-v4-flash failed (" in err
    assert "HTTP 503" in err and "): now spare:spare-model" in err
