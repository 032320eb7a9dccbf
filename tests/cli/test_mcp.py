"""MCP from the command line: a Claude Code `.mcp.json` and `dsh run` against the loopback
model server; `dsh mcp list | add | remove`; workspace trust."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from dsh.workspace import Trust, dsh_home
from tests.plugins.mcp.support import stdio_server, write_mcp_json

from .support import cli_env, workspace
from .support import run_cli as dsh
from .terminal import Chats, answer, at_prompt, exits_cleanly, tool_call


@contextmanager
def recording_model_server(tmp_path: Path, script: list[Any]) -> Iterator[tuple[str, Path]]:
    """The loopback OpenAI-compatible server playing `script`: (its URL, the file where it
    records each request)."""
    path, record = tmp_path / "script.json", tmp_path / "requests.jsonl"
    path.write_text(json.dumps(script))
    command = [sys.executable, "-m", "dsh.testing.openai_server", "--script", str(path)]
    server = subprocess.Popen(
        [*command, "--port", "0", "--record", str(record)],
        stdout=subprocess.PIPE,
        text=True,
        env=cli_env(tmp_path),
    )
    try:
        assert server.stdout is not None
        yield server.stdout.readline().strip(), record
    finally:
        server.terminate()
        server.wait(timeout=10)


@pytest.fixture
def model_server(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """The model adds 2 and 3 with the MCP tool."""
    script = [
        {"parts": [{"tool_call": {"name": "mcp__calc__add", "arguments": {"a": 2, "b": 3}}}]},
        {"parts": ["2 + 3 = 5."]},
    ]
    with recording_model_server(tmp_path, script) as served:
        yield served


def loopback_env(url: str) -> dict[str, str]:
    return {"DEEPSEEK_BASE_URL": url, "DEEPSEEK_API_KEY": "sk-test"}


def tools_offered(record: Path) -> list[str]:
    first = json.loads(record.read_text().splitlines()[0])
    return [t["function"]["name"] for t in first["body"]["tools"]]


def run_with_calc(
    tmp_path: Path, url: str, *flags: str, **server: Any
) -> subprocess.CompletedProcess[str]:
    """`dsh run` in a workspace whose `.mcp.json` has the test server as `calc`."""
    ws = workspace(tmp_path)
    write_mcp_json(ws, {"calc": stdio_server(**server)})
    return dsh(tmp_path, "run", "--cwd", str(ws), *flags, "add 2 and 3", env=loopback_env(url))


def test_a_claude_code_mcp_json_gives_the_model_its_tools(
    tmp_path: Path, model_server: tuple[str, Path]
) -> None:
    url, record = model_server
    result = run_with_calc(tmp_path, url, "--trust-workspace", approval="allow")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "2 + 3 = 5."
    assert "mcp__calc__add" in result.stderr and "5" in result.stderr
    assert "mcp__calc__add" in tools_offered(record)


def test_an_untrusted_workspace_runs_without_its_servers_and_says_so_once(
    tmp_path: Path, model_server: tuple[str, Path]
) -> None:
    url, record = model_server
    result = run_with_calc(tmp_path, url, approval="allow")
    assert result.returncode == 0, result.stderr
    assert result.stderr.count("this workspace is not trusted") == 1
    assert ".mcp.json" in result.stderr and "--trust-workspace" in result.stderr
    assert not any(name.startswith("mcp__") for name in tools_offered(record))


def test_mcp_tools_ask_by_default_so_run_denies_them_without_yes(
    tmp_path: Path, model_server: tuple[str, Path]
) -> None:
    url, _ = model_server
    result = run_with_calc(tmp_path, url, "--trust-workspace")
    assert result.returncode == 3, result.stderr  # completed, with refused calls
    assert 'tool "mcp__calc__add" needs the user\'s approval' in result.stderr


def test_a_bad_mcp_json_is_one_line_and_exit_2(tmp_path: Path) -> None:
    home = dsh_home()  # the test's own (conftest), which the child inherits
    home.mkdir(parents=True)
    (home / "mcp.json").write_text(json.dumps({"mcpServers": {"x": {"command": "c", "args": "a"}}}))
    result = dsh(
        tmp_path,
        "run",
        "--cwd",
        str(workspace(tmp_path)),
        "hi",
        env=loopback_env("http://127.0.0.1:9"),
    )
    assert result.returncode == 2
    (line,) = result.stderr.strip().splitlines()
    assert f"{home / 'mcp.json'}: mcpServers.x.args: expected an array of strings" in line
    assert "Traceback" not in result.stderr


def test_add_list_and_remove(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    server = stdio_server()
    added = dsh(
        tmp_path, "mcp", "add", "calc", "--cwd", str(ws), "--", server["command"], *server["args"]
    )
    assert added.returncode == 0, added.stderr
    assert "not trusted yet" in added.stdout
    entry: dict[str, Any] = json.loads((ws / ".mcp.json").read_text())["mcpServers"]["calc"]
    assert entry == {"command": server["command"], "args": server["args"]}
    web = (
        "mcp",
        "add",
        "-t",
        "http",
        "web",
        "http://127.0.0.1:9/mcp",
        "-H",
        "X-Key: k",
        "-s",
        "user",
    )
    assert dsh(tmp_path, *web).returncode == 0
    listed = dsh(tmp_path, "mcp", "list", "--cwd", str(ws))
    assert listed.returncode == 0, listed.stderr
    assert listed.stderr == ""
    lines = listed.stdout.splitlines()
    assert lines[0].split() == ["web", "http", "failed", str(dsh_home() / "mcp.json")]
    assert lines[1].strip() == "cannot reach http://127.0.0.1:9/mcp: All connection attempts failed"
    assert lines[2].split() == ["calc", "stdio", "untrusted", str(ws / ".mcp.json")]
    again = dsh(tmp_path, "mcp", "add", "calc", "--cwd", str(ws), "--", "other")
    assert again.returncode == 2 and "already has a server" in again.stderr
    assert dsh(tmp_path, "mcp", "remove", "web", "--cwd", str(ws)).returncode == 0
    missing = dsh(tmp_path, "mcp", "remove", "web", "--cwd", str(ws))
    assert missing.returncode == 2 and 'no MCP server "web"' in missing.stderr


def test_list_starts_trusted_servers_and_shows_their_tools(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    write_mcp_json(ws, {"calc": stdio_server(), "gone": {"command": str(ws / "missing")}})
    Trust().trust(ws)  # as dsh chat records a yes
    listed = dsh(tmp_path, "mcp", "list", "--cwd", str(ws), "--json")
    assert listed.returncode == 0, listed.stderr
    status = {s["name"]: s for s in map(json.loads, listed.stdout.splitlines())}
    assert status["calc"]["state"] == "ready" and "mcp__calc__add" in status["calc"]["tools"]
    assert status["gone"]["state"] == "failed"
    assert "No such file or directory" in status["gone"]["error"]


def test_chat_shows_servers_with_slash_mcp_and_asks_before_their_tools(chat: Chats) -> None:
    dsh_home().mkdir(parents=True)
    (dsh_home() / "mcp.json").write_text(json.dumps({"mcpServers": {"calc": stdio_server()}}))
    t, _ = chat([answer(tool_call("mcp__calc__add", a=2, b=3)), answer("Five.")])
    t.enter("/mcp")
    t.wait_for(lambda t: any(re.search(r"calc\s+stdio\s+pending", x) for x in t.lines()))
    t.enter("add 2 and 3")
    t.wait_for("? mcp__calc__add needs your approval")
    t.wait_for(lambda t: t.cursor_line().startswith("allow?"))
    t.enter("y")
    t.wait_for("Five.").wait_for(at_prompt)
    t.enter("/mcp")
    t.wait_for(lambda t: any(re.search(r"calc\s+stdio\s+ready", x) for x in t.lines()))
    t.wait_for(lambda t: any("tools: mcp__calc__add" in x for x in t.lines()))
    exits_cleanly(t)


def test_list_says_how_to_trust_and_trusts_for_one_listing(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    write_mcp_json(ws, {"calc": stdio_server()})
    untrusted = dsh(tmp_path, "mcp", "list", "--cwd", str(ws))
    assert untrusted.returncode == 0, untrusted.stderr
    assert untrusted.stdout.splitlines()[-1] == (
        "untrusted servers start once the workspace is trusted: dsh chat asks, and "
        "--trust-workspace trusts it for one command"
    )
    trusted = dsh(tmp_path, "mcp", "list", "--cwd", str(ws), "--trust-workspace", "--json")
    assert trusted.returncode == 0, trusted.stderr
    (status,) = map(json.loads, trusted.stdout.splitlines())
    assert status["state"] == "ready" and "mcp__calc__add" in status["tools"]
    assert not Trust().is_trusted(ws)  # for that listing only


def test_serve_without_the_mcp_sdk_names_the_extra(tmp_path: Path) -> None:
    hide = "import sys; sys.modules['mcp'] = None; from dsh.cli import main; main()"
    result = subprocess.run(
        [sys.executable, "-c", hide, "mcp", "serve"],
        capture_output=True,
        text=True,
        env=cli_env(tmp_path, DEEPSEEK_API_KEY="sk-test"),
        cwd=workspace(tmp_path),
        timeout=60,
    )
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip() == (
        "dsh: dsh mcp serve needs dsh's mcp extra: pip install 'mcp>=2.3' "
        "(pipx: pipx inject dsh 'mcp>=2.3')"
    )


def test_chat_completes_prompt_commands_and_mentions(chat: Chats) -> None:
    dsh_home().mkdir(parents=True)
    (dsh_home() / "mcp.json").write_text(json.dumps({"mcpServers": {"calc": stdio_server()}}))
    t, server = chat([answer("Ready."), answer("Reviewed."), answer("Compared.")])
    t.enter("hello")  # the first turn starts the servers
    t.wait_for("Ready.").wait_for(at_prompt)
    t.type("/mcp__calc__r")
    t.wait_for(
        lambda t: any("/mcp__calc__review" in x and "Review a file." in x for x in t.lines())
    )
    t.type("eview ")
    t.wait_for(lambda t: any("path=" in x for x in t.display()))
    t.enter("")  # a required argument is missing: said, not sent
    t.wait_for("/mcp__calc__review needs path (usage: /mcp__calc__review PATH [FOCUS])")
    t.enter("/mcp__calc__review src/a.py")
    t.wait_for("Reviewed.").wait_for(at_prompt)
    t.type("compare @calc:memo://o")
    t.wait_for(lambda t: any("@calc:memo://one" in x and "The first memo" in x for x in t.lines()))
    t.enter("ne")
    t.wait_for("Compared.").wait_for(at_prompt)
    sent = [r["body"]["messages"][-1]["content"] for r in server.requests()]
    assert "Review src/a.py, looking for bugs." in json.dumps(sent[1])
    assert "[resource memo://one]\\nmemo one" in json.dumps(sent[2])
    exits_cleanly(t)


def test_chat_asks_a_servers_elicitation_at_the_prompt(chat: Chats) -> None:
    dsh_home().mkdir(parents=True)
    entry = stdio_server(approval="allow")
    (dsh_home() / "mcp.json").write_text(json.dumps({"mcpServers": {"calc": entry}}))
    t, server = chat([answer(tool_call("mcp__calc__book")), answer("Booked.")])
    t.enter("book a table")
    t.wait_for("? (1/3) Book a table?")
    t.wait_for(lambda t: t.cursor_line().startswith("answer"))
    t.enter("friday")
    t.wait_for("? (2/3) Guests")
    t.enter("4")
    t.wait_for("? (3/3) Terrace — Sit outside")
    t.enter("1")  # yes
    t.wait_for("Booked.").wait_for(at_prompt)
    sent = json.dumps(server.requests()[-1]["body"]["messages"])
    assert "booked friday for 4 (terrace: True)" in sent
    exits_cleanly(t)
