"""`--sandbox MODE` and `dsh config show` through real subprocesses."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from dsh.plugins.sandbox import probe

from .test_cli_basics import run
from .test_run import dsh

HAS_BWRAP = asyncio.run(probe("bwrap", network=False)) is None


@pytest.mark.skipif(not HAS_BWRAP, reason="bubblewrap cannot run here")
def test_run_in_read_only_mode_logs_it_and_cannot_write(tmp_path: Path) -> None:
    write = {"command": "echo hi > made.txt", "description": "write a file"}
    result = dsh(
        tmp_path,
        [{"tool": "bash", "args": write}, "Could not."],
        "--yes",
        "--sandbox",
        "read-only",
        "make a file",
    )
    assert result.returncode == 0, result.stderr
    assert "file access denied under read-only mode" in result.stderr
    assert not (tmp_path / "ws" / "made.txt").exists()
    [log] = (tmp_path / "sessions").rglob("session.jsonl")
    first = json.loads(log.read_text().splitlines()[1])
    assert first["type"] == "sandbox/mode" and first["data"] == {"mode": "read-only"}


def test_sandbox_needs_the_plugin(tmp_path: Path) -> None:
    off = tmp_path / "off.yml"
    off.write_text("- id: sandbox\n  disabled: true\n")
    result = dsh(tmp_path, ["unused"], "--profile", str(off), "--sandbox", "read-only", "hi")
    assert result.returncode == 2
    assert "--sandbox needs the sandbox plugin" in result.stderr


def test_config_show_prints_the_mode_and_whether_bubblewrap_works(tmp_path: Path) -> None:
    result = run(["config", "show"], tmp_path)
    assert result.returncode == 0, result.stderr
    expected = "(bubblewrap; as " if HAS_BWRAP else "every bash call will ask"
    [line] = [line for line in result.stdout.splitlines() if line.startswith("sandbox:")]
    assert line.split(":", 1)[1].strip().startswith("workspace-write") and expected in line
    if HAS_BWRAP:
        settings = result.stdout.split("# layers")[0].splitlines()[1:]
        rows = {
            topic.strip(): allowed.strip()
            for topic, _, allowed in (row.partition(":") for row in settings)
        }
        assert rows["writes"] == f"{tmp_path}; a private /tmp"
        assert rows["read-only"].startswith("in each writable root: .git/hooks/, .git/config,")
        assert rows["unreadable"].startswith("~/.ssh, ~/.gnupg, ~/.aws")
        assert rows["network"] == "none (a private loopback only)"
        assert rows["limits"].startswith("1024 processes")
    assert "- id: sandbox\n  name: sandbox\n  config:\n    mode: workspace-write" in result.stdout
    missing = tmp_path / "missing.yml"
    missing.write_text("- id: sandbox\n  config: {mode: read-only, bwrap: /nonexistent/bwrap}\n")
    result = run(["config", "show", "--profile", str(missing)], tmp_path)
    shown = " ".join(result.stdout.split())
    assert "sandbox: read-only: bubblewrap not found ('/nonexistent/bwrap')" in shown


@pytest.mark.skipif(not HAS_BWRAP, reason="bubblewrap cannot run here")
def test_a_command_cannot_plant_an_escape_for_the_next_run(tmp_path: Path) -> None:
    """`dsh run --yes`, the model choosing bash's commands: what it writes to the workspace's
    control files would run unconfined at the next run; it cannot write them."""
    marker = Path("/var/tmp") / f"dsh-planted-{tmp_path.name}"
    plant = (
        "printf -- '- id: sandbox\\n  config: {mode: danger-full-access}\\n' > dsh.yml; "
        f'echo \'{{"mcpServers": {{"x": {{"command": "touch", "args": ["{marker}"]}}}}}}\' '
        "> .mcp.json; mkdir -p .claude && echo '{}' > .claude/settings.json"
    )
    first = dsh(
        tmp_path,
        [{"tool": "bash", "args": {"command": plant, "description": "plant"}}, "Done."],
        "--yes",
        "plant",
    )
    assert first.returncode == 0, first.stderr
    assert "Read-only file system" in first.stderr
    ws = tmp_path / "ws"
    assert not (ws / "dsh.yml").exists() and not (ws / ".mcp.json").exists()
    assert not (ws / ".claude").exists()
    escape = {"command": f"touch {marker}", "description": "escape"}
    second = dsh(tmp_path, [{"tool": "bash", "args": escape}, "Done."], "--yes", "escape")
    assert second.returncode == 0, second.stderr
    assert not marker.exists()
