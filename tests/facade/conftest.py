"""The facade against the loopback model server, over either wire API."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

import dsh
from dsh.testing import OpenAIServer

APIS = ("openai", "anthropic")


@dsh.tool
def word_count(text: str) -> int:
    """Count the words in a text."""
    return len(text.split())


@pytest.fixture
async def server() -> AsyncIterator[OpenAIServer]:
    async with OpenAIServer() as running:
        yield running


@pytest.fixture(params=APIS)
def route(
    request: pytest.FixtureRequest, server: OpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> dict[str, Any]:
    """`model=` and `base_url=` reaching `server` over one API."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    if request.param == "openai":
        return {"model": "openai:qwen", "base_url": server.base_url + "/v1"}
    return {"model": "anthropic:claude-x", "base_url": server.base_url}


@pytest.fixture
def make_agent(route: dict[str, Any], tmp_path: Any) -> Callable[..., dsh.Agent[Any]]:
    def make(**options: Any) -> dsh.Agent[Any]:
        return dsh.Agent(**{**route, "cwd": tmp_path, **options})

    return make
