"""Errors are one line saying what to do, exit 2 for what the user can fix, found before any
model call (the loopback server counts the calls), and no traceback unless asked for."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from .support import DSH, cli_env, workspace
from .terminal import ModelServer, Terminal


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ModelServer]:
    server = ModelServer(tmp_path, ["Never asked."])
    yield server
    server.close()


def dsh(
    tmp_path: Path, *args: str, base_url: str = "", **env: str
) -> subprocess.CompletedProcess[str]:
    environment = cli_env(tmp_path, DEEPSEEK_API_KEY="sk-test", **env)
    if base_url:
        environment["DEEPSEEK_BASE_URL"] = base_url
    return subprocess.run(
        [sys.executable, *DSH, *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=environment,
        cwd=tmp_path,
    )


def one_line(text: str) -> str:
    lines = text.strip().splitlines()
    assert len(lines) == 1, text
    assert "Traceback" not in text
    return lines[0]


def test_an_unusable_session_root_stops_before_the_model(
    tmp_path: Path, server: ModelServer
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    root = str(blocker / "sessions")
    args = ["--cwd", str(workspace(tmp_path))]
    result = dsh(tmp_path, "run", *args, "hello", base_url=server.url, DSH_SESSION_ROOT=root)
    assert result.returncode == 2
    line = one_line(result.stderr)
    assert f"the session root {root} is not a writable directory" in line
    assert "set DSH_SESSION_ROOT" in line

    env = cli_env(tmp_path, DEEPSEEK_BASE_URL=server.url, DEEPSEEK_API_KEY="sk-test")
    env["DSH_SESSION_ROOT"] = root
    chat = Terminal([sys.executable, *DSH, "chat", *args], env=env, cwd=tmp_path)
    try:
        assert chat.wait_exit() == 2
    finally:
        chat.close()
    shown = "".join(chat.lines())  # one line, wrapped by the terminal
    assert shown.startswith("dsh: ") and shown.count("dsh: ") == 1
    assert f"the session root {root} is not a writable directory" in shown
    assert server.requests() == []


@pytest.mark.parametrize("where", ["missing", "a-file"])
def test_a_bad_cwd_stops_before_the_model(tmp_path: Path, server: ModelServer, where: str) -> None:
    path = tmp_path / where
    if where == "a-file":
        path.write_text("x")
    result = dsh(tmp_path, "run", "--cwd", str(path), "hello", base_url=server.url)
    assert result.returncode == 2
    problem = "no such directory" if where == "missing" else "not a directory"
    assert one_line(result.stderr).startswith(f"dsh: --cwd {path}: {problem}")
    assert server.requests() == []


def test_an_unknown_flag_names_it_and_shows_the_usage(tmp_path: Path, server: ModelServer) -> None:
    result = dsh(tmp_path, "run", "--bogus", "hello", base_url=server.url)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "dsh run: No such option: --bogus",
        "usage: dsh run [OPTIONS] [TASK]   (dsh run --help for more)",
    ]
    assert server.requests() == []


def test_help_shows_no_type_artifacts(tmp_path: Path) -> None:
    commands = (["run"], ["chat"], ["sessions", "list"], ["config", "show"], ["demo"], ["batch"])
    for command in commands:
        result = dsh(tmp_path, *command, "--help")
        assert result.returncode == 0
        assert "<bool>" not in result.stdout and "<list[" not in result.stdout
        assert "<str>" not in result.stdout and "<path>" not in result.stdout


def test_connection_refused_names_the_url_and_the_variable(tmp_path: Path) -> None:
    fast = tmp_path / "fast-retry.yml"
    fast.write_text(
        yaml.safe_dump([{"id": "retry", "config": {"max_retries": 2, "base_delay_ms": 50}}])
    )
    url = "http://127.0.0.1:9"  # the discard port: nothing listens
    result = dsh(tmp_path, "run", "--profile", str(fast), "hello", base_url=url)
    assert result.returncode == 1
    refused = f"connection refused ({url}/chat/completions)"
    # A local address that refuses is a server that is not running: no retry starts it.
    assert not [line for line in result.stderr.splitlines() if line.startswith("↻")]
    assert f"error: UNREACHABLE: deepseek-official: {refused}: is the server running?" in (
        result.stderr
    )
    assert "→ no model server answers there: check DEEPSEEK_BASE_URL (or pass --base-url)" in (
        result.stderr
    )
    flag = dsh(tmp_path, "run", "--profile", str(fast), "--base-url", url, "hello")
    assert "check --base-url, or start the server" in flag.stderr
    assert "Traceback" not in result.stderr + flag.stderr


def test_a_refused_key_names_the_variable(tmp_path: Path) -> None:
    server = ModelServer(tmp_path, [{"http_error": {"status": 401, "message": "bad key"}}])
    try:
        result = dsh(tmp_path, "run", "hello", base_url=server.url)
    finally:
        server.close()
    assert result.returncode == 1
    assert "error: INVALID_CREDENTIAL: deepseek-official: HTTP 401: bad key" in result.stderr
    assert "→ the server refused the API key: check DEEPSEEK_API_KEY" in result.stderr
    assert "sk-test" not in result.stdout + result.stderr


def test_a_missing_key_is_one_line_before_the_model(tmp_path: Path, server: ModelServer) -> None:
    env = cli_env(tmp_path, DEEPSEEK_BASE_URL=server.url)
    env.pop("DEEPSEEK_API_KEY", None)
    result = subprocess.run(
        [sys.executable, *DSH, "run", "hello"], capture_output=True, text=True, env=env, timeout=60
    )
    assert result.returncode == 2
    assert one_line(result.stderr).startswith(
        "dsh: no API key for deepseek-official: set DEEPSEEK_API_KEY"
    )
    assert server.requests() == []


def test_internal_errors_are_one_line_unless_verbose(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yml"
    broken.write_text(yaml.safe_dump([{"id": "boom", "name": "tests.cli.broken_plugin:Plugin"}]))
    quiet = dsh(tmp_path, "config", "show", "--profile", str(broken))
    assert quiet.returncode == 1
    assert quiet.stderr.splitlines() == [
        "dsh: internal error: RuntimeError: a defect in a plugin",
        "(for the traceback: run again as `dsh --verbose …`, or with DSH_LOG_LEVEL=debug)",
    ]
    loud = dsh(tmp_path, "--verbose", "config", "show", "--profile", str(broken))
    assert "Traceback" in loud.stderr
    debug = dsh(tmp_path, "config", "show", "--profile", str(broken), DSH_LOG_LEVEL="debug")
    assert "Traceback" in debug.stderr


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        (["--base-url", "localhost:8000", "hi"], "--base-url 'localhost:8000': not an http://"),
        (["--base-url", "ftp://host/v1", "hi"], "not an http:// or https:// URL"),
        ([""], "no task: the task given is empty"),
        (["   "], "no task: the task given is empty"),
    ],
)
def test_usage_errors_exit_2_before_any_session(
    tmp_path: Path, args: list[str], problem: str
) -> None:
    result = subprocess.run(
        [sys.executable, *DSH, "run", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=cli_env(tmp_path, DEEPSEEK_API_KEY="sk-test"),
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 2
    assert result.stderr.startswith("dsh: ") and problem in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "sessions").exists()  # nothing was started


def test_ctrl_c_while_the_command_loads_exits_130_without_a_traceback(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Ctrl-C before the command's own handling is set up (while typer and the runtime are
    imported) ends the command as a cancel: 130, nothing printed."""
    import builtins

    from dsh.cli import main

    real_import = builtins.__import__

    def interrupted(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "_app" or name.endswith("cli._app"):
            raise KeyboardInterrupt
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", interrupted)
    with pytest.raises(SystemExit) as exited:
        main(["run", "hi"])
    assert exited.value.code == 130


def test_a_key_an_openai_compatible_server_wants_names_its_variable(tmp_path: Path) -> None:
    server = ModelServer(tmp_path, [{"http_error": {"status": 401, "message": "key needed"}}])
    try:
        env = cli_env(tmp_path)
        env.pop("OPENAI_API_KEY", None)
        result = subprocess.run(
            [sys.executable, *DSH, "run", "-m", "openai:local", "--base-url", server.url, "hi"],
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
            cwd=tmp_path,
        )
    finally:
        server.close()
    assert result.returncode == 1
    assert "→ the server wants an API key: set OPENAI_API_KEY" in result.stderr
