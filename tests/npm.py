"""Official JavaScript SDKs for protocol tests: installed from npm into a cache folder (kept
between runs), with a clear skip when node or npm is missing or the registry cannot be
reached."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
from pathlib import Path

import pytest

NPM_CACHE = Path(
    os.environ.get("DSH_TEST_NPM_CACHE") or Path.home() / ".cache" / "dsh-tests" / "npm"
)


def npm_project(name: str, packages: list[str], script: Path) -> Path:
    """A folder holding `packages` (exact versions) and a copy of `script` (so its imports
    resolve there); skips the calling test when that cannot be."""
    folder = npm_folder(name, packages)
    shutil.copy(script, folder / script.name)
    return folder / script.name


def npm_folder(name: str, packages: list[str]) -> Path:
    """A folder of the cache with `packages` (exact versions) installed in its
    `node_modules`; skips the calling test when that cannot be."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("node and npm are not installed: the JavaScript SDK test needs them")
    folder = NPM_CACHE / name
    folder.mkdir(parents=True, exist_ok=True)
    wanted = "\n".join(packages)
    marker = folder / "installed.txt"
    if not marker.is_file() or marker.read_text() != wanted:
        (folder / "package.json").write_text('{"private": true, "type": "module"}\n')
        done = subprocess.run(
            ["npm", "install", "--no-audit", "--no-fund", "--loglevel=error", *packages],
            cwd=folder,
            capture_output=True,
            text=True,
            timeout=300,
        )
        if done.returncode != 0:
            pytest.skip(f"npm install {' '.join(packages)} failed: {done.stderr.strip()[-300:]}")
        marker.write_text(wanted)
    return folder


async def run_node(script: Path, *args: str) -> str:
    """`node SCRIPT ARGS` (in the script's folder); its stdout, asserting it succeeded."""
    child = await asyncio.create_subprocess_exec(
        "node", str(script), *args, cwd=script.parent, stdout=-1, stderr=-1
    )
    out, err = await asyncio.wait_for(child.communicate(), 120)
    assert child.returncode == 0, err.decode()
    return out.decode()
