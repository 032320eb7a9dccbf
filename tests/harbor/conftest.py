"""A Python 3.12 venv with Harbor (and dsh's dependencies; dsh itself comes from this
checkout through PYTHONPATH), made once and kept under a stable temp path keyed by the
Harbor version and dsh's dependency list, so a rerun starts at once."""

from __future__ import annotations

import asyncio
import glob
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import tomllib
from asyncio.subprocess import PIPE
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO

HARBOR_VERSION = os.environ.get("DSH_TEST_HARBOR_VERSION", "0.26.0")
"""The Harbor release the tests run against (pinned: its API moves between releases)."""
SRC = REPO / "src"


def _works(python: str) -> bool:
    check = "import sys; sys.exit(sys.version_info < (3, 12))"
    try:
        return (
            subprocess.run([python, "-c", check], capture_output=True, timeout=30).returncode == 0
        )
    except OSError:
        return False


def python312() -> str | None:
    """A Python >= 3.12 (Harbor's minimum) that runs: `$DSH_TEST_PYTHON312`, then the PATH,
    then pyenv's versions (a pyenv shim on the PATH may name a version that is not active)."""
    given = os.environ.get("DSH_TEST_PYTHON312")
    candidates = [given] if given else []
    candidates += [shutil.which(n) for n in ("python3.12", "python3.13", "python3.14")]
    candidates += sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.1[2-9]*/bin/python3")))
    return next((c for c in candidates if c and _works(c)), None)


def _dependencies() -> list[str]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    return list(project["dependencies"])


def harbor_venv() -> Path:
    """The venv's folder, made when missing (about a minute on first use); skips the test
    with the reason when no Python 3.12 or no Harbor package can be had."""
    python = python312()
    if python is None:
        pytest.skip("Harbor needs Python >= 3.12: none found (set DSH_TEST_PYTHON312)")
    deps = _dependencies()
    key = hashlib.sha256(json.dumps([HARBOR_VERSION, deps]).encode()).hexdigest()[:10]
    folder = Path(tempfile.gettempdir()) / f"dsh-test-harbor-{HARBOR_VERSION}-{key}"
    ready = folder / "ready"
    if ready.is_file():
        return folder / "venv"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    steps: list[Sequence[str]] = [
        [python, "-m", "venv", str(folder / "venv")],
        [
            str(folder / "venv" / "bin" / "python"),
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            f"harbor=={HARBOR_VERSION}",
            *deps,
        ],
    ]
    for step in steps:
        done = subprocess.run(step, capture_output=True, text=True, timeout=900)
        if done.returncode != 0:
            shutil.rmtree(folder, ignore_errors=True)
            tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
            pytest.skip(f"no Harbor {HARBOR_VERSION} venv ({' '.join(step[:4])}…): {tail}")
    ready.write_text(HARBOR_VERSION + "\n")
    return folder / "venv"


@pytest.fixture(scope="session")
def harbor_python() -> Path:
    """The Python of the Harbor venv."""
    return harbor_venv() / "bin" / "python"


def run_in_harbor(
    python: Path, args: Sequence[str], *, env: dict[str, str] | None = None, timeout: float = 120
) -> Any:
    """Run `python ARGS` (dsh importable from this checkout); its stdout's last line as JSON."""
    environ = {**os.environ, **(env or {}), "PYTHONPATH": os.pathsep.join([str(REPO), str(SRC)])}
    done = subprocess.run(
        [str(python), *args], capture_output=True, text=True, env=environ, timeout=timeout
    )
    assert done.returncode == 0, f"{args}: exit {done.returncode}\n{done.stderr[-4000:]}"
    return json.loads(done.stdout.strip().splitlines()[-1])


async def run_in_harbor_async(python: Path, args: Sequence[str], *, limit: float = 120) -> Any:
    """`run_in_harbor` without blocking the event loop (a loopback server may be on it)."""
    environ = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(SRC)])}
    process = await asyncio.create_subprocess_exec(
        str(python), *args, env=environ, stdout=PIPE, stderr=PIPE
    )
    out, err = await asyncio.wait_for(process.communicate(), limit)
    assert process.returncode == 0, f"{args}: exit {process.returncode}\n{err.decode()[-4000:]}"
    return json.loads(out.decode().strip().splitlines()[-1])


def validate_atif(python: Path, trajectories: dict[str, Any]) -> dict[str, Any]:
    """Each trajectory validated by Harbor's own ATIF models; what they read back."""
    script = (
        "import json, sys\n"
        "from harbor.models.trajectories import Trajectory\n"
        "given = json.load(open(sys.argv[1]))\n"
        "print(json.dumps({k: Trajectory.model_validate(v).to_json_dict()"
        " for k, v in given.items()}))\n"
    )
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "given.json"
        path.write_text(json.dumps(trajectories))
        result: dict[str, Any] = run_in_harbor(python, ["-c", script, str(path)])
    return result
