"""Laziness lives at the optional extras' boundary only: booting the default profile imports
none of them (MCP's SDK, OpenTelemetry, PostgreSQL, Ray, the web server, the web fetcher's
HTML converter) and no pydantic; inside the core, imports are plain."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

LOADED_ON_FIRST_USE = (
    "anyio",
    "httpx",
    "markdownify",
    "mcp",
    "opentelemetry",
    "psycopg",
    "pydantic",
    "ray",
    "starlette",
    "uvicorn",
    "dsh.persistence._postgres",
    "dsh.persistence._sqlite",
    "dsh.plugins.mcp._transport",
    "dsh.plugins.otel._telemetry",
)
# The packages whose names load on first use (an extra's boundary; `dsh` itself, so that
# `import dsh.client` loads no core).
LAZY_PACKAGES = ("dsh", "dsh.persistence", "dsh.plugins.otel")

BOOT = f"""
import asyncio, json, sys
import dsh

async def main():
    ctx = await dsh.boot()
    loaded = [m for m in {LOADED_ON_FIRST_USE!r} if m in sys.modules]
    await ctx.owner.dispose()
    print(json.dumps(loaded))

asyncio.run(main())
"""


def test_boot_of_the_default_profile_leaves_first_use_code_unloaded(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    env = {**os.environ, "DEEPSEEK_API_KEY": "sk-test", "DSH_HOME": str(tmp_path / "home")}
    env.pop("DSH_OTEL", None)
    result = subprocess.run(
        [sys.executable, "-c", BOOT], cwd=workspace, env=env, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout.splitlines()[-1]) == []


@pytest.mark.parametrize("package", LAZY_PACKAGES)
def test_a_lazy_package_still_exports_every_name(package: str) -> None:
    module = importlib.import_module(package)
    missing = [name for name in module.__all__ if getattr(module, name, None) is None]
    assert not missing
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = module.nope
