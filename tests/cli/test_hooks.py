"""Hooks at the command line: a Claude Code project under `dsh run --trust-hooks`, trust,
`dsh hooks list`, and `dsh chat`'s trust question and `/hooks`."""

from __future__ import annotations

import json
import shutil
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pexpect
import pytest

from .support import DSH, cli_env, scripted_profile, workspace

needs_jq = pytest.mark.skipif(shutil.which("jq") is None, reason="jq is not installed")

GUARD = """#!/usr/bin/env bash
command=$(jq -r '.tool_input.command // ""')
if [[ "$command" == *"rm -rf"* ]]; then
  echo "Blocked: rm -rf is not allowed in this repository" >&2
  exit 2
fi
exit 0
"""
FORMAT = """#!/usr/bin/env bash
file=$(jq -r '.tool_input.file_path')
sed -i 's/[[:space:]]*$//' "$file"
"""

STOP = 'cat > stop-input.json; printf "%s\\n%s\\n" "$DSH_PROJECT_DIR" "$PWD" > stop-env.txt'


def claude_project(tmp_path: Path) -> Path:
    """A project as a Claude Code user has it: hooks in .claude/settings.json."""
    ws = workspace(tmp_path)
    hooks_dir = ws / ".claude" / "hooks"
    hooks_dir.mkdir(parents=True)
    for name, body in (("guard.sh", GUARD), ("format.sh", FORMAT)):
        path = hooks_dir / name
        path.write_text(body)
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
    run = '"$CLAUDE_PROJECT_DIR"/.claude/hooks/'
    settings = {
        "permissions": {"allow": ["Bash(ls:*)"]},
        "hooks": {
            "PreToolUse": [
                {"matcher": "Bash", "hooks": [{"type": "command", "command": run + "guard.sh"}]}
            ],
            "PostToolUse": [
                {
                    "matcher": "Write|Edit|MultiEdit",
                    "hooks": [{"type": "command", "command": run + "format.sh", "timeout": 30}],
                }
            ],
            "Stop": [{"hooks": [{"type": "command", "command": STOP}]}],
        },
    }
    (ws / ".claude" / "settings.json").write_text(json.dumps(settings, indent=2))
    (ws / "build").mkdir()
    return ws


SCRIPT: list[Any] = [
    {"tool": "bash", "args": {"command": "rm -rf build", "description": "clean"}},
    {"tool": "write", "args": {"file_path": "notes.txt", "content": "one   \ntwo\t\n"}},
    "Done.",
]


def dsh(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    profile = scripted_profile(tmp_path, SCRIPT)
    command = [*DSH, *args, "--profile", str(profile), "--cwd", str(workspace(tmp_path))]
    if args[0] == "run":
        command += ["--provider", "scripted", "--model", "scripted"]
    return subprocess.run(
        [sys.executable, *command],
        capture_output=True,
        text=True,
        timeout=120,
        env=cli_env(tmp_path),
        cwd=tmp_path,
    )


@needs_jq
def test_a_claude_code_project_behaves_the_same_under_trust_hooks(tmp_path: Path) -> None:
    ws = claude_project(tmp_path)
    result = dsh(tmp_path, "run", "--yes", "--trust-hooks", "tidy up")
    assert result.returncode == 0, result.stderr
    assert (ws / "build").is_dir()  # the guard blocked rm -rf
    assert (ws / "notes.txt").read_text() == "one\ntwo\n"  # the formatter ran after write
    assert "⚑ PreToolUse hook blocked: Blocked: rm -rf is not allowed" in result.stderr
    assert "not trusted" not in result.stderr
    stop = json.loads((ws / "stop-input.json").read_text())
    assert stop["hook_event_name"] == "Stop" and stop["stop_hook_active"] is False
    assert stop["cwd"] == str(ws) and stop["session_id"].startswith("session-")
    transcript = Path(stop["transcript_path"])
    assert transcript.name == "session.jsonl" and stop["session_id"] in transcript.read_text()
    assert (ws / "stop-env.txt").read_text().splitlines() == [str(ws), str(ws)]


@needs_jq
def test_without_trust_the_workspace_hooks_do_not_run_and_dsh_says_so(tmp_path: Path) -> None:
    ws = claude_project(tmp_path)
    (ws / "build" / "keep").write_text("x")
    result = dsh(tmp_path, "run", "--yes", "tidy up")
    assert result.returncode == 0, result.stderr
    assert "dsh: note: this workspace is not trusted" in result.stderr
    assert ".claude/settings.json" in result.stderr and "--trust-workspace" in result.stderr
    assert not (ws / "build").exists()  # nothing guarded it
    assert (ws / "notes.txt").read_text() == "one   \ntwo\t\n"


def test_hooks_list_shows_sources_trust_and_what_is_skipped(tmp_path: Path) -> None:
    ws = claude_project(tmp_path)
    settings = json.loads((ws / ".claude" / "settings.json").read_text())
    settings["hooks"]["PermissionRequest"] = [{"hooks": [{"type": "command", "command": "x"}]}]
    (ws / ".claude" / "settings.json").write_text(json.dumps(settings))
    result = dsh(tmp_path, "hooks", "list")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == (
        f"workspace {ws} (not trusted: dsh chat asks; --trust-workspace trusts it for one command)"
    )
    assert lines[1].split() == [
        "PreToolUse",
        "Bash",
        '"$CLAUDE_PROJECT_DIR"/.claude/hooks/guard.sh',
        "default",
        "timeout",
        ".claude/settings.json:",
        "not",
        "trusted",
    ]
    assert "30s" in lines[2] and lines[2].startswith("PostToolUse  Write|Edit|MultiEdit")
    assert lines[3].startswith("Stop         *  ")
    assert lines[4] == (
        "skipped (.claude/settings.json): PermissionRequest is not a hook point dsh runs"
    )


def test_a_broken_settings_file_is_one_line_and_exit_2(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    (ws / ".dsh").mkdir()
    (ws / ".dsh" / "settings.json").write_text('{"hooks": {"Stop": [')
    for args in (("run", "hi"), ("hooks", "list")):
        result = dsh(tmp_path, *args)
        assert result.returncode == 2, result.stderr
        assert result.stderr.strip().startswith(f"dsh: {ws / '.dsh' / 'settings.json'}: line 1")
        assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_a_bad_hooks_row_is_one_line_naming_every_key_and_exit_2(tmp_path: Path) -> None:
    row = tmp_path / "hooks-row.yml"
    config = {"default_timeout_s": 0, "max_output_bytes": "lots"}
    row.write_text(json.dumps([{"id": "hooks", "config": config}]))
    command = [*DSH, "hooks", "list", "--profile", str(row), "--cwd", str(workspace(tmp_path))]
    result = subprocess.run(
        [sys.executable, *command], capture_output=True, text=True, env=cli_env(tmp_path)
    )
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip() == (
        "dsh: profile row hooks: config.default_timeout_s: must be > 0, got 0;"
        " config.max_output_bytes: expected an integer, got 'lots'"
    )


@needs_jq
def test_chat_asks_once_remembers_and_shows_the_hooks(tmp_path: Path) -> None:
    ws = claude_project(tmp_path)

    def spawn() -> pexpect.spawn:
        profile = scripted_profile(tmp_path, SCRIPT)
        args = [*DSH, "chat", "--profile", str(profile), "--provider", "scripted"]
        args += ["--model", "scripted", "--cwd", str(ws)]
        return pexpect.spawn(
            sys.executable,
            args,
            env=cli_env(tmp_path, TERM="xterm"),
            cwd=str(tmp_path),
            timeout=30,
            encoding="utf-8",
            dimensions=(40, 200),
        )

    child = spawn()
    child.expect(r"Trust this workspace \(hooks, MCP servers\)\? \[y/N\]")
    child.sendline("y")
    child.expect("trusted")
    child.expect("new session session-")
    child.sendline("/hooks")
    child.expect("guard.sh")
    child.sendline("tidy up")
    child.expect("PreToolUse hook blocked")
    child.expect(r"allow\? y once")  # the write asks; the blocked bash never did
    child.sendline("y")
    child.expect("Done.")
    child.sendline("/exit")
    child.expect(pexpect.EOF)
    assert (ws / "build").is_dir()

    child = spawn()  # the second time: trusted, no question
    child.expect("new session session-")
    assert "Trust this workspace" not in (child.before or "")
    child.sendline("/exit")
    child.expect(pexpect.EOF)


def test_settings_without_hooks_need_no_word_about_trust(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    (ws / ".claude").mkdir()
    (ws / ".claude" / "settings.json").write_text('{"permissions": {"allow": ["Read"]}}')
    result = dsh(tmp_path, "run", "--yes", "hello")
    assert result.returncode == 0, result.stderr
    assert "not trusted" not in result.stderr


def test_hooks_list_trusts_the_workspace_for_one_listing(tmp_path: Path) -> None:
    ws = claude_project(tmp_path)
    result = dsh(tmp_path, "hooks", "list", "--trust-workspace")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == f"workspace {ws}"
    assert "not trusted" not in result.stdout and "runs" in lines[1]
    assert "not trusted" in dsh(tmp_path, "hooks", "list").stdout  # nothing was recorded
