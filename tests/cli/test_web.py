"""`dsh web` as a person starts it: a child process serving on a free port of this machine,
reached over real HTTP, its model a loopback server; and the one-line refusals."""

from __future__ import annotations

import asyncio
import signal
import sys
from pathlib import Path

import httpx

from dsh.client import AsyncHarness
from dsh.testing import OpenAIServer

from .support import DSH, cli_env, loopback_env, run_dsh, workspace


async def test_dsh_web_serves_the_page_and_stops_on_ctrl_c(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    async with OpenAIServer(["From JSON-RPC.", "Hello from the web."]) as server:
        env = loopback_env(tmp_path, server.base_url)
        async with AsyncHarness(
            provider="deepseek-official", model="m", cwd=str(ws), env=env
        ) as harness:
            await harness.run("Made over JSON-RPC", session_id="session-jsonrpc")
        args = ["web", "--no-open", "--port", "0", "--cwd", str(ws)]
        child = await asyncio.create_subprocess_exec(
            sys.executable, *DSH, *args, env=env, stdout=-1, stderr=-1
        )
        try:
            session_id = await use_the_page(child)
        finally:
            if child.returncode is None:
                child.kill()
                await child.wait()
    listed = await run_dsh(cli_env(tmp_path), "sessions", "list")
    assert session_id in listed[1] and "session-jsonrpc" in listed[1]


async def use_the_page(child: asyncio.subprocess.Process) -> str:
    """Log in with the printed URL, see the JSON-RPC session, run a prompt, press Ctrl+C
    with its stream still open; the new session's id."""
    assert child.stdout is not None and child.stderr is not None
    line = (await asyncio.wait_for(child.stdout.readline(), 60)).decode().strip()
    assert line.startswith("dsh web: http://127.0.0.1:"), line
    url = line.removeprefix("dsh web: ")
    base = url.partition("/?token=")[0]
    async with httpx.AsyncClient(base_url=base, timeout=30) as client:
        assert (await client.get("/")).status_code == 401
        login = await client.get(url)
        assert login.status_code == 303 and login.headers["location"] == "/"
        page = await client.get("/")  # with the cookie
        assert page.status_code == 200 and 'role="log"' in page.text
        (stored,) = (await client.get("/api/sessions")).json()["sessions"]
        assert stored["id"] == "session-jsonrpc" and stored["title"] == "Made over JSON-RPC"

        made = await client.post("/api/sessions", json={"text": "Hi"})
        session_id: str = made.json()["session_id"]
        events = f"/api/sessions/{session_id}/events"
        rows = []
        async with client.stream("GET", events) as stream:
            async for row in stream.aiter_lines():
                rows.append(row)
                if '"TurnEndEvent"' in row:
                    break
            assert any('"AssistantMessageEvent"' in r and "Hello from the web." in r for r in rows)
            child.send_signal(signal.SIGINT)  # with a stream still open
            assert await asyncio.wait_for(child.wait(), 30) == 0
    return session_id


async def test_another_address_needs_a_private_token_file(tmp_path: Path) -> None:
    env = cli_env(tmp_path)
    code, _, err = await run_dsh(env, "web", "--no-open", "--host", "0.0.0.0", "--port", "0")
    assert code == 2
    assert err.strip().splitlines() == [
        "dsh: --host 0.0.0.0 makes the agent reachable from other machines: pass "
        "--token-file FILE too (a file only you can read, holding the access token)"
    ]
    token = tmp_path / "token"
    token.write_text("a-long-enough-secret-token\n")
    token.chmod(0o644)
    args = ["web", "--no-open", "--host", "0.0.0.0", "--token-file", str(token)]
    code, _, err = await run_dsh(env, *args)
    assert code == 2 and f"chmod 600 {token}" in err and len(err.strip().splitlines()) == 1


async def test_without_the_web_extra_it_says_which_to_install(tmp_path: Path) -> None:
    hide = "import sys; sys.modules['starlette'] = None; from dsh.cli import main; main()"
    child = await asyncio.create_subprocess_exec(
        sys.executable, "-c", hide, "web", "--no-open", env=cli_env(tmp_path), stderr=-1
    )
    _, err = await asyncio.wait_for(child.communicate(), 60)
    assert child.returncode == 2
    assert err.decode().strip() == (
        "dsh: dsh web needs dsh's web extra: pip install 'httptools>=0.6' 'starlette>=0.40' "
        "'uvicorn>=0.30' (pipx: pipx inject dsh 'httptools>=0.6' 'starlette>=0.40' "
        "'uvicorn>=0.30')"
    )
