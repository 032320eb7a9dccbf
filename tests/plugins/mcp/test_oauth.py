"""OAuth for remote MCP servers against a real authorization server and protected MCP
server (the SDK's server auth, `oauth_server.py`, in a child process): the login follows
the redirect with an HTTP client instead of a browser."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import stat
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from dsh.agent import run_prompt, session_events
from dsh.events import ToolProgressEvent
from dsh.plugins.mcp._auth_store import auth_file
from dsh.plugins.mcp._login import LoginError, login, logout
from dsh.testing import reply, tool_call

from .support import OAuthServer, running_oauth_server
from .test_servers import result_text, results


@pytest.fixture(params=["http", "sse"])
def oauth_server(request: pytest.FixtureRequest) -> Iterator[OAuthServer]:
    with running_oauth_server(request.param) as server:
        yield server


async def follow_redirect(url: str) -> bool:
    """The browser: the authorization server consents at once and redirects to the
    loopback listener, which this request then reaches."""
    async with httpx.AsyncClient(follow_redirects=True) as http:
        (await http.get(url)).raise_for_status()
    return True


async def test_login_stores_tokens_privately_and_the_runtime_uses_them(
    oauth_server: OAuthServer, workspace: Path, runtime_factory: Any
) -> None:
    spec = oauth_server.spec()
    shown: list[str] = []
    assert await login(spec, shown.append, browser=follow_redirect)
    assert any("Log in to hosted in your browser: http" in line for line in shown)
    path = auth_file(spec)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert not str(path).startswith(str(workspace))
    state = oauth_server.state()
    assert (state["registrations"], state["authorizations"]) == (1, 1)

    rt = await runtime_factory(workspace, {"mcpServers": {"hosted": oauth_server.entry()}})
    agent = await rt.agent(workspace)
    rt.model.add(reply(tool_call("mcp__hosted__whoami", {})), reply("in"))
    assert (await run_prompt(agent, "who")).finish_reason == "completed"
    assert result_text(results(agent)[0]) == "authorized"
    (status,) = rt.hub.statuses()
    assert status.auth == "logged-in"
    assert oauth_server.state()["authorizations"] == 1


async def test_without_a_login_the_server_fails_saying_how_to_log_in(
    oauth_server: OAuthServer, workspace: Path, runtime_factory: Any
) -> None:
    rt = await runtime_factory(workspace, {"mcpServers": {"hosted": oauth_server.entry()}})
    await rt.hub.wait_started(None, __import__("dsh").kernel.CancelSignal())
    (status,) = rt.hub.statuses()
    assert status.state == "failed" and status.auth == "login-required"
    assert "login required: run `dsh mcp login hosted`" in (status.error or "")
    assert oauth_server.state()["registrations"] == 0  # nothing registered for nothing


@pytest.mark.parametrize("left_s", [-5, 30], ids=["expired", "expiring"])
async def test_an_expired_or_expiring_token_is_refreshed_before_the_first_request(
    oauth_server: OAuthServer, workspace: Path, runtime_factory: Any, left_s: int
) -> None:
    spec = oauth_server.spec()
    await login(spec, lambda line: None, browser=follow_redirect)
    path = auth_file(spec)
    record = json.loads(path.read_text())
    record["expiresAt"] = time.time() + left_s  # most of an hour went by
    path.write_text(json.dumps(record))
    rt = await runtime_factory(workspace, {"mcpServers": {"hosted": oauth_server.entry()}})
    agent = await rt.agent(workspace)
    rt.model.add(reply(tool_call("mcp__hosted__whoami", {})), reply("in"))
    await run_prompt(agent, "who")
    assert result_text(results(agent)[0]) == "authorized"
    state = oauth_server.state()
    assert (state["authorizations"], state["refreshes"]) == (1, 1)
    fresh = json.loads(path.read_text())
    assert fresh["tokens"]["access_token"] != record["tokens"]["access_token"]
    assert fresh["expiresAt"] > time.time() + 3000


async def test_a_401_mid_session_is_answered_with_a_refresh(
    oauth_server: OAuthServer, workspace: Path, runtime_factory: Any, caplog: Any
) -> None:
    caplog.set_level(logging.DEBUG)
    spec = oauth_server.spec()
    await login(spec, lambda line: None, browser=follow_redirect)
    rt = await runtime_factory(workspace, {"mcpServers": {"hosted": oauth_server.entry()}})
    agent = await rt.agent(workspace)
    call = tool_call("mcp__hosted__whoami", {})
    rt.model.add(reply(call), reply("one"), reply(call), reply("two"))
    await run_prompt(agent, "who")
    oauth_server.expire_access_tokens()  # the server forgets the access token
    await run_prompt(agent, "who again")
    assert [result_text(r) for r in results(agent)] == ["authorized", "authorized"]
    state = oauth_server.state()
    assert (state["authorizations"], state["refreshes"]) == (1, 1)
    # No token reached a log line.
    assert state["issued"] and not any(token in caplog.text for token in state["issued"])


async def test_logout_revokes_and_deletes_the_tokens(oauth_server: OAuthServer) -> None:
    spec = oauth_server.spec()
    await login(spec, lambda line: None, browser=follow_redirect)
    assert await logout(spec) == "logged out of hosted: tokens revoked and deleted"
    assert not auth_file(spec).exists()
    state = oauth_server.state()
    assert (state["revocations"], state["live_refresh"]) == (2, 0)
    assert await logout(spec) == "not logged in to hosted"


async def test_a_failed_login_keeps_the_tokens_it_had(oauth_server: OAuthServer) -> None:
    spec = oauth_server.spec()
    await login(spec, lambda line: None, browser=follow_redirect)
    before = json.loads(auth_file(spec).read_text())["tokens"]
    refused: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    refused.set_result("http://127.0.0.1:1/callback?error=access_denied")  # pasted back

    async def nowhere(url: str) -> bool:
        return False

    with pytest.raises(LoginError, match="the authorization server refused: access_denied"):
        await login(spec, lambda line: None, browser=nowhere, pasted=refused)
    assert json.loads(auth_file(spec).read_text())["tokens"] == before


async def test_a_logged_in_servers_progress_streams_while_the_call_runs(
    oauth_server: OAuthServer, workspace: Path, runtime_factory: Any, tmp_path: Path
) -> None:
    await login(oauth_server.spec(), lambda line: None, browser=follow_redirect)
    gate = tmp_path / "gate"
    os.mkfifo(gate)
    rt = await runtime_factory(workspace, {"mcpServers": {"hosted": oauth_server.entry()}})
    agent = await rt.agent(workspace)
    rt.model.add(reply(tool_call("mcp__hosted__count_to", {"steps": 2, "gate": str(gate)})))
    rt.model.add(reply("counted"))
    events = session_events(agent, typed=True, progress=True)
    run = asyncio.ensure_future(run_prompt(agent, "count"))
    async for event in events:
        if isinstance(event, ToolProgressEvent) and event.message == "step 2 of 2":
            break
    assert not run.done()  # the call waits on the gate: its progress came before its end
    await events.aclose()  # type: ignore[attr-defined]
    await asyncio.to_thread(gate.write_text, "go\n")
    assert (await run).finish_reason == "completed"
