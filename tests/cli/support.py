"""What the CLI tests share: a profile mounting a scripted model, and a clean environment."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).parents[2]
CHILD_PYTHONPATH = os.pathsep.join([str(ROOT / "src"), str(ROOT)])
"""A child's `PYTHONPATH`: this tree's `dsh` (the venv's editable install may be another
worktree's) and `tests`."""
DSH = ["-c", "from dsh.cli import main; main()"]


def scripted_profile(tmp_path: Path, script: list[Any]) -> Path:
    """A profile file mounting `tests.server.support:ScriptedPlugin` with `script`."""
    profile = tmp_path / "scripted.yml"
    row = {"id": "scripted", "name": "tests.server.support:ScriptedPlugin"}
    profile.write_text(yaml.safe_dump([{**row, "config": {"script": script}}]))
    return profile


def cli_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """The environment of a CLI child: sessions and home under `tmp_path`."""
    return {
        **os.environ,
        "PYTHONPATH": CHILD_PYTHONPATH,
        "DSH_SESSION_ROOT": str(tmp_path / "sessions"),
        "HOME": str(tmp_path),
        "NO_COLOR": "1",
        **extra,
    }


def run_cli(
    tmp_path: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`dsh ARGS` run to its end in `tmp_path`, in `cli_env` with `env` over it."""
    return subprocess.run(
        [sys.executable, *DSH, *args],
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=120,
        env=cli_env(tmp_path, **(env or {})),
        cwd=tmp_path,
    )


def loopback_env(tmp_path: Path, base_url: str, **extra: str) -> dict[str, str]:
    """`cli_env` with the DeepSeek route pointed at a loopback server (a placeholder key)."""
    return cli_env(tmp_path, DEEPSEEK_BASE_URL=base_url, DEEPSEEK_API_KEY="sk-loopback", **extra)


async def run_dsh(env: dict[str, str], *args: str) -> tuple[int, str, str]:
    """`dsh ARGS` in a child process, awaited without blocking the event loop (a loopback
    server of the test may be serving on it): exit code, stdout, stderr."""
    child = await asyncio.create_subprocess_exec(
        sys.executable, *DSH, *args, env=env, stdout=-1, stderr=-1
    )
    out, err = await asyncio.wait_for(child.communicate(), 300)
    assert child.returncode is not None
    return child.returncode, out.decode(), err.decode()


def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir(exist_ok=True)
    return path
