"""The sandbox's config, checked without pydantic: writable roots must be absolute."""

from __future__ import annotations

from pathlib import Path

import pytest

from dsh import Context
from dsh.kernel import PluginError
from dsh.plugins.sandbox import SANDBOX, SandboxPlugin


async def test_writable_roots_expand_and_normalize() -> None:
    ctx = Context()
    await ctx.plugin(SandboxPlugin, {"writable_roots": ["~/shared", "/srv/a/../b"]})
    roots = ctx.require(SANDBOX).config.writable_roots
    assert roots == [str(Path.home() / "shared"), "/srv/b"]


async def test_a_relative_writable_root_is_named() -> None:
    message = r"config: writable_roots: root 'rel' must be an absolute path"
    with pytest.raises(PluginError, match=message):
        await Context().plugin(SandboxPlugin, {"writable_roots": ["rel"]})
