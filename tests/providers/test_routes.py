"""Model strings `provider:model` → routes, mounted through a profile and reached over HTTP."""

from __future__ import annotations

import pytest

from dsh.agent import AgentOptions, CreateAgentOptions, run_prompt
from dsh.llm.adapters import RouteError, parse_model
from dsh.profiles import CORE_ROWS, boot, load_profile
from dsh.testing import OpenAIServer


def test_deepseek_is_the_default_route(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DEEPSEEK_BASE_URL", raising=False)
    monkeypatch.delenv("DEEPSEEK_API_KEY", raising=False)
    for spec in ("deepseek:deepseek-v4-pro", "deepseek-v4-pro", " deepseek:deepseek-v4-pro "):
        route = parse_model(spec)
        assert (route.provider, route.model) == ("deepseek-official", "deepseek-v4-pro")
        assert route.base_url == "https://api.deepseek.com"
        assert route.api_key_env == "DEEPSEEK_API_KEY"
        assert route.missing_credential == "DEEPSEEK_API_KEY"
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-x")
    assert parse_model("deepseek:deepseek-v4-pro").missing_credential is None
    # The default profile's deepseek row is patched, not mounted twice; its own config stays.
    profile = load_profile().with_config("deepseek", idle_timeout_s=5)
    patched = parse_model("deepseek:m", base_url="http://127.0.0.1:9/").apply(profile)
    row = patched.row("deepseek")
    assert row is not None
    assert row.config == {"idle_timeout_s": 5, "base_url": "http://127.0.0.1:9/"}
    assert [r.id for r in patched.rows].count("deepseek") == 1


def test_openai_route_reads_its_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    official = parse_model("openai:gpt-4.1")
    assert (official.provider, official.model) == ("openai", "gpt-4.1")
    assert official.base_url == "https://api.openai.com/v1"
    assert official.missing_credential == "OPENAI_API_KEY"
    # A local server at another URL takes no key unless one is set.
    local = parse_model("openai:qwen2.5-coder:7b", base_url="http://127.0.0.1:8000/v1")
    assert local.model == "qwen2.5-coder:7b"
    assert local.api_key_env is None and local.missing_credential is None
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:8001/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-o")
    from_env = parse_model("openai:m")
    assert from_env.base_url == "http://127.0.0.1:8001/v1"
    assert from_env.api_key_env == "OPENAI_API_KEY"


def test_other_routes_are_served_by_the_profile() -> None:
    assert parse_model("scripted") == parse_model("scripted:scripted")
    local = parse_model("local:qwen")
    assert (local.provider, local.model, local.row) == ("local", "qwen", None)
    profile = load_profile()
    applied = local.apply(profile)  # no adapter row: the agent loop's names the route
    assert [r.id for r in applied.rows] == [r.id for r in profile.rows]
    loop = applied.row("agent-loop")
    assert loop is not None and loop.config is not None
    assert (loop.config["provider"], loop.config["model"]) == ("local", "qwen")


@pytest.mark.parametrize("spec", ["openai:", ":m", "", "deepseek:"])
def test_a_string_without_a_model_is_refused(spec: str) -> None:
    with pytest.raises(RouteError, match="names no model: write provider:model"):
        parse_model(spec)


def test_base_url_needs_a_builtin_provider() -> None:
    with pytest.raises(RouteError, match="write openai:qwen"):
        parse_model("local:qwen", base_url="http://127.0.0.1:1/v1")


async def test_an_openai_route_answers_a_turn_over_http(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    async with OpenAIServer(["routed"]) as server:
        route = parse_model("openai:qwen", base_url=server.base_url + "/v1")
        ctx = await boot(route.apply(load_profile(base=CORE_ROWS)))
        try:
            options = AgentOptions(provider=route.provider, model=route.model)
            handle = await ctx.agents.create(CreateAgentOptions("s-route", agent_options=options))
            result = await run_prompt(handle.agent, "hi")
        finally:
            await ctx.owner.dispose()
    assert result.text == "routed"
    request = server.requests[0]
    assert request.path == "/v1/chat/completions"
    assert request.body["model"] == "qwen"
    assert "authorization" not in request.headers


async def test_an_anthropic_route_answers_a_turn_over_the_messages_api(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    assert parse_model("deepseek-anthropic:deepseek-v4-pro").api_key_env == "DEEPSEEK_API_KEY"
    async with OpenAIServer(["over messages"]) as server:
        route = parse_model("anthropic:claude-x", base_url=server.base_url)
        assert (route.provider, route.api) == ("anthropic", "messages")
        ctx = await boot(route.apply(load_profile(base=CORE_ROWS)))
        try:
            options = AgentOptions(provider=route.provider, model=route.model)
            handle = await ctx.agents.create(CreateAgentOptions("s-claude", agent_options=options))
            result = await run_prompt(handle.agent, "hi")
        finally:
            await ctx.owner.dispose()
    assert result.text == "over messages"
    request = server.requests[0]
    assert request.path == "/v1/messages" and request.body["model"] == "claude-x"
    assert request.headers["x-api-key"] == "sk-ant-test"
