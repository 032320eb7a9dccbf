"""A web UI over the default profile (plus invariants) with a scripted model."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from dsh.plugins.invariants import INVARIANTS
from dsh.profiles import DEFAULT_ROWS, boot, load_profile
from dsh.testing import ScriptedModel
from dsh.web import WebUI, bind, serve

from .support import Site, web_config


@pytest.fixture
async def site(tmp_path: Path) -> AsyncIterator[Site]:
    profile = load_profile(base=[{"id": "invariants", "name": "invariants"}, *DEFAULT_ROWS])
    ctx = await boot(profile)
    model = ScriptedModel()
    model.install(ctx)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    web = WebUI(ctx, web_config(workspace))
    invariants = ctx.require(INVARIANTS)
    try:
        yield Site(ctx, model, web, workspace)
    finally:
        await web.aclose()
        await ctx.owner.dispose()
    assert invariants.violations == [], invariants.violations


@pytest.fixture
async def served(site: Site) -> AsyncIterator[str]:
    """The site's web UI served by uvicorn on a free port of 127.0.0.1."""
    sock = bind("127.0.0.1", 0)
    stop = asyncio.Event()
    server = asyncio.create_task(serve(site.web, sock, stop=stop))
    yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    stop.set()
    await server


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: Any) -> Iterator[None]:
    """Keep each phase's report on the item, so a browser fixture can tell a failure."""
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    setattr(item, f"report_{report.when}", report)
