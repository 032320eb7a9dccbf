"""Daily comforts, through real processes: the task from stdin, continuing the latest
session, id prefixes, the session list, any OpenAI-compatible server, settings shown with
secrets masked, tool output as it was printed."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from .support import DSH, cli_env, workspace
from .terminal import ModelServer


def dsh(
    tmp_path: Path, *args: str, stdin: str | None = None, cwd: Path | None = None, **env: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *DSH, *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        env=cli_env(tmp_path, **env),
        cwd=cwd or tmp_path,
    )


def served(tmp_path: Path, script: list[Any]) -> tuple[ModelServer, dict[str, str]]:
    server = ModelServer(tmp_path, script)
    return server, {"DEEPSEEK_BASE_URL": server.url, "DEEPSEEK_API_KEY": "sk-test"}


def prompts(server: ModelServer) -> list[str]:
    """The last user message of each request the server received."""
    return [r["body"]["messages"][-1]["content"] for r in server.requests()]


def session_of(result: subprocess.CompletedProcess[str]) -> str:
    found = re.search(r"session (session-[0-9a-f-]+) ·", result.stderr)
    assert found, result.stderr
    return found.group(1)


def test_the_task_comes_from_stdin(tmp_path: Path) -> None:
    server, env = served(tmp_path, ["From a dash.", "From a pipe.", "Reviewed."])
    try:
        dashed = dsh(tmp_path, "run", "-", stdin="summarise this\nplease\n", **env)
        piped = dsh(tmp_path, "run", stdin="what is 2 + 2?", **env)
        both = dsh(tmp_path, "run", "review this", stdin="- old\n+ new\n", **env)
    finally:
        server.close()
    assert dashed.returncode == 0 and piped.returncode == 0, dashed.stderr + piped.stderr
    assert (dashed.stdout, piped.stdout, both.stdout) == (
        "From a dash.\n",
        "From a pipe.\n",
        "Reviewed.\n",
    )
    assert prompts(server) == [
        "summarise this\nplease",
        "what is 2 + 2?",
        "review this\n\n- old\n+ new",
    ]
    empty = dsh(tmp_path, "run", "-", stdin="", **env)
    assert empty.returncode == 2 and "standard input was empty" in empty.stderr


def test_continue_prefixes_and_the_session_list(tmp_path: Path) -> None:
    here, elsewhere = workspace(tmp_path), tmp_path / "elsewhere"
    elsewhere.mkdir()
    script = ["Noted: tulip.", "Another project.", "The word was tulip."]
    server, env = served(tmp_path, script)
    try:
        first = dsh(tmp_path, "run", "remember   the word\ntulip", cwd=here, **env)
        other = dsh(tmp_path, "run", "something else", cwd=elsewhere, **env)
        again = dsh(tmp_path, "run", "-c", "what was the word?", cwd=here, **env)
    finally:
        server.close()
    assert session_of(again) == session_of(first) != session_of(other)
    assert server.requests()[2]["body"]["messages"][1]["content"] == "remember   the word\ntulip"

    listed = dsh(tmp_path, "sessions", "list").stdout.splitlines()
    assert [line.split()[0] for line in listed] == [session_of(first), session_of(other)]
    row = [cell.strip() for cell in listed[0].split("  ") if cell.strip()]
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d", row[1])
    assert row[2] == "2 turns" and row[-1] == "remember the word tulip"
    assert row[3] == "~/ws"  # the session's workspace (HOME is tmp_path here)

    prefix = session_of(other).removeprefix("session-")[:6]
    shown = dsh(tmp_path, "sessions", "show", prefix)
    assert shown.returncode == 0 and "> something else" in shown.stdout
    vague = dsh(tmp_path, "sessions", "show", "session-")
    assert vague.returncode == 2 and "matches 2 sessions" in vague.stderr
    assert "…" not in vague.stderr  # both named: nothing left out
    lonely = tmp_path / "lonely"
    lonely.mkdir()
    nothing = dsh(tmp_path, "run", "-c", "hello?", cwd=lonely, **env)
    assert nothing.returncode == 2 and f"no earlier session in {lonely}" in nothing.stderr


def test_any_openai_compatible_server_from_the_command_line(tmp_path: Path) -> None:
    server = ModelServer(tmp_path, ["Hi from qwen.", "Hi from the flag.", "Hi from DSH_MODEL."])
    openai = {"OPENAI_BASE_URL": server.url, "OPENAI_API_KEY": "sk-openai"}
    try:
        routed = dsh(tmp_path, "run", "--model", "openai:qwen2.5-coder", "hi", **openai)
        flagged = dsh(tmp_path, "run", "-m", "openai:llama3", "--base-url", server.url, "hi")
        default = dsh(tmp_path, "run", "hi", DSH_MODEL="openai:qwen2.5-coder", **openai)
    finally:
        server.close()
    for result, text in ((routed, "Hi from qwen."), (flagged, "Hi from the flag.")):
        assert result.returncode == 0, result.stderr
        assert result.stdout == text + "\n"
    assert default.stdout == "Hi from DSH_MODEL.\n"
    first, second, third = server.requests()
    assert first["path"] == second["path"] == "/chat/completions"
    models = [r["body"]["model"] for r in (first, second, third)]
    assert models == ["qwen2.5-coder", "llama3", "qwen2.5-coder"]
    assert first["headers"]["authorization"] == "<redacted>"  # a key was sent
    assert "authorization" not in second["headers"]  # a local server at --base-url: none


def test_config_show_prints_effective_settings_with_secrets_masked(tmp_path: Path) -> None:
    profile = tmp_path / "local.yml"
    route = {
        "provider": "local",
        "base_url": "http://127.0.0.1:8000/v1",
        "headers": {"Authorization": "Bearer sk-very-secret"},
        "idle_timeout_s": 60,
    }
    rows = [
        {"id": "openai-compat", "name": "openai_compat", "config": {"routes": [route]}},
        {"id": "agent-loop", "config": {"provider": "local", "model": "qwen"}},
        {"id": "compaction", "config": {"threshold_ratio": 0.7}},
    ]
    profile.write_text(yaml.safe_dump(rows))
    result = dsh(tmp_path, "config", "show", "--profile", str(profile), DEEPSEEK_API_KEY="sk-x")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "sk-very-secret" not in out and "sk-x" not in out
    assert "Authorization: '***'" in out
    settings = dict(
        line.split(":", 1) for line in out.splitlines() if not line.startswith(("#", "-", " "))
    )
    assert settings["model"].strip() == "local / qwen"
    assert settings["endpoint"].strip() == "http://127.0.0.1:8000/v1/chat/completions"
    assert settings["timeouts"].strip() == "connect 10 s, idle 60 s"
    assert settings["compaction"].strip().startswith("at 70% of the context window")
    assert settings["approval"].strip().startswith("allow read, glob, grep, todo_write, skill, ")


def test_tool_results_keep_their_whitespace(tmp_path: Path) -> None:
    printf = {"command": "printf 'a\\n    b  c\\n'", "description": "Print"}
    call = {"tool_call": {"name": "bash", "arguments": printf}}
    server, env = served(tmp_path, [{"parts": [call]}, "Printed."])
    try:
        result = dsh(tmp_path, "run", "--yes", "--cwd", str(workspace(tmp_path)), "print", **env)
    finally:
        server.close()
    assert result.returncode == 0, result.stderr
    lines = result.stderr.splitlines()
    assert "  ⎿ a" in lines, result.stderr
    at = lines.index("  ⎿ a")
    assert lines[at + 1] == "        b  c"  # the indent after the gutter, inner spaces kept


def test_sessions_list_json(tmp_path: Path) -> None:
    server, env = served(tmp_path, ["One."])
    try:
        dsh(tmp_path, "run", "first prompt", **env)
    finally:
        server.close()
    rows = [
        json.loads(line) for line in dsh(tmp_path, "sessions", "list", "--json").stdout.splitlines()
    ]
    assert [(r["title"], r["turns"]) for r in rows] == [("first prompt", 1)]


def test_after_continue_a_file_read_earlier_counts_as_read_for_edit(tmp_path: Path) -> None:
    """A file the session read in an earlier process may be edited after `-c` without
    reading it again, as long as nothing changed it since; one changed since must be
    read again (the model's view of it is stale)."""
    from .terminal import tool_call

    here = workspace(tmp_path)
    (here / "notes.txt").write_text("alpha\n")
    (here / "other.txt").write_text("one\n")
    script = [
        {"parts": [tool_call("read", file_path="notes.txt")]},
        {"parts": [tool_call("read", file_path="other.txt")]},
        "Read both.",
        {
            "parts": [
                tool_call("edit", file_path="notes.txt", old_string="alpha", new_string="beta")
            ]
        },
        {"parts": [tool_call("edit", file_path="other.txt", old_string="one", new_string="two")]},
        "Edited.",
    ]
    server, env = served(tmp_path, script)
    try:
        first = dsh(tmp_path, "run", "--yes", "read them", cwd=here, **env)
        (here / "other.txt").write_text("one, changed outside\n")
        again = dsh(tmp_path, "run", "--yes", "-c", "edit them", cwd=here, **env)
    finally:
        server.close()
    assert first.returncode == 0 and again.returncode == 0, first.stderr + again.stderr
    assert (here / "notes.txt").read_text() == "beta\n"
    assert (here / "other.txt").read_text() == "one, changed outside\n"
    results = [m for m in server.requests()[-1]["body"]["messages"] if m["role"] == "tool"]
    assert "edit requires reading" not in results[-2]["content"]
    assert f'edit requires reading "{here / "other.txt"}" first' in results[-1]["content"]
