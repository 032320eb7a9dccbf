"""Fallback models against two loopback servers: the first failing for good moves the session
to the next model of the list (a durable `model/switch` naming why); a request the provider
rejects as invalid, or a cancel, never does."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import dsh
from dsh.llm import LlmFailure
from dsh.plugins.fallback import falls_back
from dsh.testing import OpenAIServer, http_error

FAST_RETRY = {"id": "retry", "config": {"max_retries": 1, "base_delay_ms": 1, "max_delay_ms": 2}}


def profile(backup: OpenAIServer) -> list[dict[str, Any]]:
    route = {"provider": "backup", "base_url": backup.base_url + "/v1"}
    return [
        {"id": "backup", "name": "openai_compat", "config": {"routes": [route]}},
        FAST_RETRY,
        {"id": "fallback", "config": {"models": ["backup:spare-model"]}},
    ]


def on_primary(primary: OpenAIServer, cwd: Path, rows: list[Any], **more: Any) -> dsh.Agent[Any]:
    """An agent whose own model is DeepSeek's route at `primary`."""
    model = "deepseek:deepseek-v4-flash"
    return dsh.Agent(model, base_url=primary.base_url, cwd=cwd, profile=rows, **more)


def switches(root: Path) -> list[dict[str, Any]]:
    lines = [x for f in root.rglob("*.jsonl") for x in f.read_text().splitlines()]
    return [json.loads(x)["data"] for x in lines if '"model/switch"' in x]


async def test_a_model_failing_for_good_falls_back_to_the_next(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-test")
    primary = OpenAIServer([http_error(503), http_error(503)])
    backup = OpenAIServer(["answered by the spare", "still the spare"])
    async with primary, backup:
        store = dsh.JsonlStore(tmp_path / "sessions")
        agent = on_primary(primary, tmp_path, profile(backup), store=store)
        async with agent:
            run = await agent.run("hello")
            assert run.output == "answered by the spare"
            again = await agent.run("more", session=run.session_id)  # the switch holds
            assert again.output == "still the spare"
    assert len(primary.requests) == 2  # the call and its one retry
    assert [r.body["model"] for r in backup.requests] == ["spare-model", "spare-model"]
    assert [m["content"] for m in backup.requests[0].body["messages"][1:]] == ["hello"]
    [switch] = switches(tmp_path / "sessions")
    assert switch["model"] == "spare-model" and switch["previousModel"] == "deepseek-v4-flash"
    assert switch["fallback"].startswith("SERVER: ")


async def test_a_built_in_provider_is_mounted_when_first_needed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-test")
    primary = OpenAIServer([http_error(529), http_error(529)])
    backup = OpenAIServer(["from openai"])
    async with primary, backup:
        monkeypatch.setenv("OPENAI_BASE_URL", backup.base_url + "/v1")
        fallback = {"id": "fallback", "config": {"models": ["nowhere:x", "openai:gpt-spare"]}}
        agent = on_primary(primary, tmp_path, [FAST_RETRY, fallback])
        async with agent:
            assert (await agent.run("hello")).output == "from openai"
    assert backup.requests[0].body["model"] == "gpt-spare"


async def test_a_session_resumed_in_a_new_runtime_goes_on_with_its_fallback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-test")
    primary = OpenAIServer([http_error(529), http_error(529)])
    backup = OpenAIServer(["from openai", "openai again"])
    async with primary, backup:
        monkeypatch.setenv("OPENAI_BASE_URL", backup.base_url + "/v1")
        rows = [FAST_RETRY, {"id": "fallback", "config": {"models": ["openai:gpt-spare"]}}]
        store = dsh.JsonlStore(tmp_path / "sessions")
        async with on_primary(primary, tmp_path, rows, store=store) as agent:
            first = await agent.run("hello")
        # A new process (`dsh run -c`): its route is mounted before the first request.
        async with on_primary(primary, tmp_path, rows, store=store) as agent:
            again = await agent.run("more", session=first.session_id)
    assert again.output == "openai again"
    assert len(primary.requests) == 2  # the failed call and its retry, nothing after
    assert [r.body["model"] for r in backup.requests] == ["gpt-spare", "gpt-spare"]


async def test_an_invalid_request_does_not_fall_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-test")
    primary = OpenAIServer([http_error(400, "bad tool schema")])
    backup = OpenAIServer([])
    async with primary, backup:
        agent = on_primary(primary, tmp_path, profile(backup))
        async with agent:
            with pytest.raises(dsh.RunError, match="bad tool schema"):
                await agent.run("hello")
    assert backup.requests == []


def test_which_failures_fall_back() -> None:
    assert falls_back(LlmFailure("overloaded", "SERVER", 529))
    assert falls_back(LlmFailure("slow down", "RATE_LIMIT", 429))
    assert falls_back(LlmFailure("no such model", "INVALID_REQUEST", 404))
    assert not falls_back(LlmFailure("bad", "INVALID_REQUEST", 400))
    assert not falls_back(LlmFailure("cancelled", "ABORTED"))
    assert not falls_back(LlmFailure("too long", "CONTEXT_WINDOW_EXCEEDED", 400))
    assert not falls_back(LlmFailure("bad key", "INVALID_CREDENTIAL", 401))
