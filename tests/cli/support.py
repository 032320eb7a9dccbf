"""What the CLI tests share: a profile mounting a scripted model, and a clean environment."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).parents[2]
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
        "PYTHONPATH": str(ROOT),
        "DSH_SESSION_ROOT": str(tmp_path / "sessions"),
        "HOME": str(tmp_path),
        "NO_COLOR": "1",
        **extra,
    }


def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir(exist_ok=True)
    return path
