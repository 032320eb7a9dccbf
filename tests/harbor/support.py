"""A `dsh run` of a scripted task against the loopback model server, and its session log."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

from dsh.llm import TokenUsage
from dsh.testing import OpenAIServer, Reply, reasoning, reply, tool_call
from tests.conftest import REPO

SRC = REPO / "src"
DSH = [sys.executable, "-c", "from dsh.cli import main; main()"]


def delegating_script() -> list[Reply]:
    """Reasoning and a subagent call; the child's answer; a bash call; the final answer."""
    return [
        reply(
            reasoning("A subagent can look first."),
            tool_call(
                "subagent",
                {"description": "look around", "prompt": "List the files here."},
                id="call_sub",
            ),
            usage=TokenUsage(900, 40, cache_read_tokens=100),
        ),
        reply("There is nothing here yet.", usage=TokenUsage(300, 10)),
        reply(
            reasoning("Now write the file."),
            tool_call(
                "bash",
                {"command": "echo hello > hello.txt", "description": "write hello.txt"},
                id="call_bash",
            ),
            usage=TokenUsage(60, 20, cache_read_tokens=1000),
        ),
        reply("Wrote hello.txt.", usage=TokenUsage(40, 8, cache_read_tokens=1100)),
    ]


def dsh_env(base: Path, base_url: str) -> dict[str, str]:
    keep = {
        k: v for k, v in os.environ.items() if not k.startswith(("DEEPSEEK_", "DSH_", "OPENAI_"))
    }
    return {
        **keep,
        "HOME": str(base / "home"),
        "DSH_HOME": str(base / "home" / ".dsh"),
        "DSH_SESSION_ROOT": str(base / "sessions"),
        "DEEPSEEK_BASE_URL": base_url,
        "DEEPSEEK_API_KEY": "sk-test",
        "PYTHONPATH": str(SRC),  # this checkout's dsh, whatever the venv has installed
    }


async def dsh(args: list[str], env: dict[str, str], cwd: Path, stdin: str = "") -> str:
    process = await asyncio.create_subprocess_exec(
        *DSH,
        *args,
        cwd=cwd,
        env=env,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await process.communicate(stdin.encode())
    assert process.returncode == 0, f"dsh {args}: exit {process.returncode}\n{err.decode()}"
    return out.decode()


async def scripted_run(base: Path) -> tuple[str, dict[str, str], Path]:
    """Run the delegating script with `dsh run`; (session id, its env, the workspace)."""
    ws = base / "ws"
    ws.mkdir()
    async with OpenAIServer(delegating_script()) as server:
        env = dsh_env(base, server.base_url)
        args = ["run", "--yes", "--sandbox", "danger-full-access", "-m", "deepseek-v4-pro"]
        out = await dsh([*args, "--output-format", "json", "Write hello.txt."], env, ws)
        assert server.remaining == 0
    result: dict[str, Any] = json.loads(out)
    assert (ws / "hello.txt").read_text() == "hello\n"
    return str(result["session_id"]), env, ws
