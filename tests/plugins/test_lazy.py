"""Booting the default profile loads only what its plugins need to start: what a session may
never use (running a hook, a compaction, an MCP server, a spill's preview, a model's title,
a search, a diff) or uses only later (a model route's HTTP client and answer readers) loads
on first use. pydantic is not imported: configs are records, and a `@tool`'s validator is
built at its first call."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

LOADED_ON_FIRST_USE = (
    "difflib",
    "email",
    "dsh.llm.adapters._http",
    "dsh.llm.adapters._messages_response",
    "dsh.llm.adapters._net",
    "dsh.llm.adapters._proxy",
    "dsh.llm.adapters._response",
    "dsh.llm.adapters._sse",
    "dsh.plugins.compaction._compactor",
    "dsh.plugins.hooks._codec",
    "dsh.plugins.hooks._runner",
    "dsh.plugins.mcp._connection",
    "dsh.plugins.mcp._resources",
    "dsh.plugins.mcp._tools",
    "dsh.plugins.mcp._transport",
    "dsh.plugins.session_title._llm",
    "dsh.plugins.spill._preview",
    "dsh.plugins.web_fetch._fetch",
    "dsh.tools.builtin._change",
    "dsh.tools.builtin._globs",
    "dsh.tools.builtin._ripgrep",
    "dsh.tools.builtin._walk",
    "mcp",
    "pydantic",
)
# (uuid, decimal and datetime are msgspec's: the core's data library loads with the core.)
LAZY_PACKAGES = (
    "dsh.llm.adapters",
    "dsh.plugins.compaction",
    "dsh.plugins.hooks",
    "dsh.plugins.mcp",
    "dsh.plugins.otel",
    "dsh.plugins.session_title",
    "dsh.plugins.spill",
    "dsh.tools.builtin",
)

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
