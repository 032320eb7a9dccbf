"""Children of the runtime never see its API key, and a key a tool prints is redacted.

The JSON-RPC runtime approves bash by itself, so nobody is asked before the model runs a
command: the key must be out of the command's reach, and out of what is logged or sent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dsh.client import AsyncHarness
from dsh.plugins.sandbox import probe
from dsh.testing import OpenAIServer, reply, tool_call

from .test_jsonrpc_e2e import env_for

KEY = "sk-live-0123456789abcdef0123456789abcdef"
PROBE = "tr '\\0' '\\n' < /proc/$PPID/environ"
"""The exact command of the report: the environment of bash's parent, the runtime."""


def _runtime(tmp_path: Path, server: OpenAIServer, sandbox: str | None = None) -> AsyncHarness:
    env = {**env_for(tmp_path, server.base_url), "DEEPSEEK_API_KEY": KEY}
    if sandbox is not None:
        profile = tmp_path / "sandbox.yml"
        profile.write_text(json.dumps([{"id": "sandbox", "config": {"mode": sandbox}}]))
        env["DSH_PROFILE"] = str(profile)
    return AsyncHarness(
        provider="deepseek-official", model="fake-model", cwd=str(tmp_path), env=env
    )


def _everything_kept(tmp_path: Path, server: OpenAIServer) -> str:
    """Every request body the provider received and every stored session log."""
    bodies = [json.dumps(r.body) for r in server.requests]
    logs = [p.read_text() for p in (tmp_path / "sessions").rglob("*.jsonl")]
    return "\n".join(bodies + logs)


def _bash(command: str) -> object:
    return reply(tool_call("bash", {"command": command, "description": "look around"}))


@pytest.mark.parametrize("sandbox", ["danger-full-access", "workspace-write"])
async def test_bash_cannot_read_the_key_from_its_parent(tmp_path: Path, sandbox: str) -> None:
    if sandbox != "danger-full-access" and await probe("bwrap", network=False):
        pytest.skip("bubblewrap cannot run here")
    script = [_bash(f"{PROBE} | tee environ.txt"), "Seen."]
    async with OpenAIServer(script) as server:
        async with _runtime(tmp_path, server, sandbox) as h:
            result = await h.run("What is in your parent's environment?")
        server.assert_complete()
    assert result.finish_reason == "completed"
    seen = (tmp_path / "environ.txt").read_text()
    if sandbox == "danger-full-access":
        assert "DSH_SESSION_ROOT=" in seen  # the probe did read the runtime's environment
    else:  # in its own PID namespace, bash's parent is the sandbox, not the runtime
        assert "DSH_SESSION_ROOT=" not in seen and "DSH_SHELL=1" in seen
    assert KEY not in seen
    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"  # still in use
    assert KEY not in _everything_kept(tmp_path, server)


async def test_a_key_a_tool_prints_is_redacted(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text(f"DEEPSEEK_API_KEY={KEY}\n")
    script = [_bash("cat .env"), reply(tool_call("read", {"file_path": ".env"})), "Done."]
    async with OpenAIServer(script) as server:
        async with _runtime(tmp_path, server) as h:
            result = await h.run("Show me .env")
        server.assert_complete()
    assert result.finish_reason == "completed"
    kept = _everything_kept(tmp_path, server)
    assert KEY not in kept
    assert "DEEPSEEK_API_KEY=[redacted DEEPSEEK_API_KEY]" in kept
