"""`dsh mcp login | list | logout` against a real OAuth-protected MCP server (the SDK's
server auth, tests/plugins/mcp/oauth_server.py): the browser is `$BROWSER`, a script that
follows the redirect; without one, the address is pasted back into the terminal."""

from __future__ import annotations

import json
import stat
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pexpect
import pytest

from dsh.plugins.mcp import auth_file
from dsh.workspace import dsh_home
from tests.plugins.mcp.support import ROOT, OAuthServer, running_oauth_server

from .support import DSH, cli_env
from .support import run_cli as dsh
from .terminal import Chats, answer, at_prompt, exits_cleanly


@pytest.fixture
def hosted(tmp_path: Path) -> Iterator[OAuthServer]:
    with running_oauth_server() as server:
        dsh_home().mkdir(parents=True, exist_ok=True)
        (dsh_home() / "mcp.json").write_text(json.dumps({"mcpServers": {"hosted": server.entry()}}))
        yield server


def fake_browser(tmp_path: Path) -> str:
    """An executable for `$BROWSER` that follows the redirect (`browser.py`)."""
    browser = tmp_path / "browser"
    script = ROOT / "tests/plugins/mcp/browser.py"
    browser.write_text(f'#!/bin/sh\nexec {sys.executable} {script} "$1"\n')
    browser.chmod(0o755)
    return str(browser)


def test_login_list_and_logout(tmp_path: Path, hosted: OAuthServer) -> None:
    browser = fake_browser(tmp_path)
    before = dsh(tmp_path, "mcp", "list")
    assert "login required: run `dsh mcp login hosted`" in before.stdout, before.stderr
    login = dsh(tmp_path, "mcp", "login", "hosted", env={"BROWSER": browser})
    assert login.returncode == 0, login.stderr
    assert login.stdout.splitlines()[-1] == "logged in to hosted"
    path = auth_file(hosted.spec())
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    listed = dsh(tmp_path, "mcp", "list")
    assert listed.stdout.splitlines()[1:3] == [
        "  oauth: logged in (dsh mcp logout hosted)",
        "  2 tools: mcp__hosted__whoami, mcp__hosted__count_to",
    ]
    issued = hosted.state()["issued"]
    assert not any(token in login.stdout + login.stderr + listed.stdout for token in issued)
    logout = dsh(tmp_path, "mcp", "logout", "hosted")
    assert logout.stdout.strip() == "logged out of hosted: tokens revoked and deleted"
    assert not path.exists()


def test_a_headless_login_takes_the_pasted_address(tmp_path: Path, hosted: OAuthServer) -> None:
    child = pexpect.spawn(
        sys.executable,
        [*DSH, "mcp", "login", "hosted", "--no-browser"],
        env=cli_env(tmp_path),
        cwd=str(tmp_path),
        encoding="utf-8",
        timeout=60,
    )
    child.expect(r"in your browser: (http\S+)")
    url = child.match.group(1)
    child.expect("Or paste the address")
    # Another machine's browser: it ends on a 127.0.0.1 address it cannot reach.
    redirect = httpx.get(url).headers["location"]
    child.sendline(redirect)
    child.expect("logged in to hosted")
    child.expect(pexpect.EOF)
    assert auth_file(hosted.spec()).exists()
    assert hosted.state()["authorizations"] == 1


def test_chat_offers_the_login_and_starts_the_server_after_it(
    tmp_path: Path, hosted: OAuthServer, chat: Chats, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BROWSER", fake_browser(tmp_path))
    t, _ = chat([answer("In.")])
    t.enter("hello")  # the first turn starts the servers
    t.wait_for("In.").wait_for(at_prompt)
    t.enter("/mcp")
    t.wait_for("log in to hosted: /mcp login hosted")
    t.enter("/mcp login hosted")
    t.wait_for("logged in to hosted; starting it again").wait_for(at_prompt)
    t.enter("/mcp")
    t.wait_for("oauth: logged in (dsh mcp logout hosted)")
    t.wait_for("2 tools: mcp__hosted__whoami, mcp__hosted__count_to")
    exits_cleanly(t)
