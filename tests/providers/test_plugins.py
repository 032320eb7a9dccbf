"""Mounting the providers: routes, model tables, env, config errors, disposal."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

from dsh.kernel import PluginError
from dsh.llm import LlmCallConfig, LlmError, TextBlock
from dsh.llm.adapters import DeepSeekPlugin, HttpAdapter, OpenAICompatPlugin
from dsh.testing import OpenAIServer, reply

from .conftest import PROVIDER, Harness


async def test_deepseek_route_and_model_table(harness: Harness) -> None:
    await harness.mount()
    llm = harness.ctx.llm
    assert [p.id for p in llm.list_providers()] == [PROVIDER]
    ids = [m.id for m in llm.list_models(PROVIDER)]
    assert {"deepseek-v4-pro", "deepseek-v4-flash", "deepseek-chat"} <= set(ids)
    flash = await llm.resolve_model_info(PROVIDER, "deepseek-v4-flash")
    assert flash is not None and flash.context_window == 1_000_000
    assert flash.default_max_tokens == 256_000
    assert flash.reasoning_efforts == ("off", "low", "high", "max")
    assert flash.default_effort == "high"
    chat = await llm.resolve_model_info(PROVIDER, "deepseek-chat")
    assert chat is not None and chat.default_effort == "off"
    unknown = await llm.resolve_model_info(PROVIDER, "fake-model")
    assert unknown is not None and unknown.id == "fake-model" and unknown.provider == PROVIDER
    with pytest.raises(LlmError) as raised:
        await llm.prepare_call(LlmCallConfig(PROVIDER, "deepseek-chat", reasoning_effort="max"))
    assert raised.value.code == "UNSUPPORTED_REASONING_EFFORT"
    policy = llm.retry_policy(PROVIDER)
    assert policy.max_retries == 5 and "EMPTY_RESPONSE" in policy.retryable_codes


async def test_deepseek_config_models_and_base_url_from_env(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DEEPSEEK_BASE_URL", harness.server.base_url + "/")
    harness.server.add("from env")
    config = {
        "provider": "ds",
        "models": [{"id": "tiny", "context_window": 8000, "default_max_tokens": 100}],
        "retry": {"max_retries": 1, "base_delay_ms": 10, "max_delay_ms": 20},
    }
    await harness.ctx.plugin(DeepSeekPlugin, config)
    tiny = await harness.ctx.llm.resolve_model_info("ds", "tiny")
    assert tiny is not None and tiny.context_window == 8000 and tiny.reasoning_efforts == ()
    assert harness.ctx.llm.retry_policy("ds").max_retries == 1
    call = await harness.call(provider="ds", model="tiny")
    assert call.assembler.blocks() == [TextBlock("from env")]
    assert harness.server.requests[0].path == "/chat/completions"
    assert harness.bodies[0]["max_tokens"] == 100 and "thinking" not in harness.bodies[0]


async def test_config_errors_name_the_path(harness: Harness) -> None:
    with pytest.raises(PluginError, match=r"config\.idle_timeout_s: must be > 0, got 0"):
        await harness.ctx.plugin(DeepSeekPlugin, {"idle_timeout_s": 0})
    with pytest.raises(PluginError, match=r"config\.models\[0\]: default_effort 'high' is not"):
        await harness.ctx.plugin(
            DeepSeekPlugin, {"models": [{"id": "m", "default_effort": "high"}]}
        )
    with pytest.raises(PluginError, match=r"config\.models\[0\]\.context_window: must be > 0"):
        await harness.ctx.plugin(DeepSeekPlugin, {"models": [{"id": "m", "context_window": 0}]})
    with pytest.raises(PluginError, match=r"config\.retry: need 0 < base_delay_ms <= max_delay_ms"):
        await harness.ctx.plugin(DeepSeekPlugin, {"retry": {"base_delay_ms": 20_000}})
    with pytest.raises(PluginError, match=r"config\.routes\[0\]\.base_url: required, not given"):
        await harness.ctx.plugin(OpenAICompatPlugin, {"routes": [{"provider": "x"}]})
    with pytest.raises(PluginError, match="config: provider 'x' is declared twice"):
        route = {"provider": "x", "base_url": "http://127.0.0.1:1"}
        await harness.ctx.plugin(OpenAICompatPlugin, {"routes": [route, route]})


async def test_openai_compat_routes(harness: Harness, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOCAL_KEY", "sk-local")
    async with OpenAIServer(["from b"]) as other:
        harness.server.add("from a")
        routes = [
            {
                "provider": "local-a",
                "name": "Local A",
                "base_url": harness.server.base_url + "/v1",
                "api_key_env": "LOCAL_KEY",
                "models": [
                    {
                        "id": "m1",
                        "context_window": 32000,
                        "default_max_tokens": 512,
                        "reasoning_efforts": ["low", "high"],
                    }
                ],
                "headers": {"X-Team": "dsh"},
                "extra_body": {"seed": 7},
            },
            {"provider": "local-b", "base_url": other.base_url},  # no key: no Authorization
        ]
        await harness.ctx.plugin(OpenAICompatPlugin, {"routes": routes})
        llm = harness.ctx.llm
        assert [(p.id, p.name) for p in llm.list_providers()] == [
            ("local-a", "Local A"),
            ("local-b", "local-b"),
        ]
        a = await harness.call(provider="local-a", model="m1", reasoning_effort="low")
        b = await harness.call(provider="local-b", model="anything")
        assert a.assembler.blocks() == [TextBlock("from a")]
        assert b.assembler.blocks() == [TextBlock("from b")]
        sent_a = harness.server.requests[0]
        assert sent_a.path == "/v1/chat/completions"
        assert sent_a.headers["authorization"] == "Bearer sk-local"
        assert sent_a.headers["x-team"] == "dsh"
        assert sent_a.body["reasoning_effort"] == "low" and "thinking" not in sent_a.body
        assert sent_a.body["max_tokens"] == 512 and sent_a.body["seed"] == 7
        sent_b = other.requests[0]
        assert "authorization" not in sent_b.headers
        assert "max_tokens" not in sent_b.body  # an unlisted model gets no defaults
        assert await llm.resolve_model_info("local-b", "anything") is None


async def test_disposal_withdraws_routes_and_closes_the_client(harness: Harness) -> None:
    harness.server.add("once")
    fiber = await harness.ctx.plugin(DeepSeekPlugin, {"base_url": harness.server.base_url})
    await harness.call()
    adapter = harness.ctx.llm.adapter_for(PROVIDER)
    assert isinstance(adapter, HttpAdapter) and adapter._pool is not None
    [connection] = [c for idle in adapter._pool._idle.values() for _, c in idle]
    assert not connection.is_closed()
    await fiber.dispose()
    assert harness.ctx.llm.adapter_for(PROVIDER) is None
    assert adapter._pool is None and connection.is_closed()


async def test_keep_alive_reuses_one_connection(harness: Harness) -> None:
    harness.server.add("1", "2", "3")
    await harness.mount()
    for _ in range(3):
        await harness.call()
    assert harness.server.connections == 1  # one open connection served all three


async def test_server_runs_as_a_process(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(
        json.dumps(
            [
                "plain text",
                {
                    "parts": [{"reasoning": "hm"}, {"tool_call": {"name": "ls", "arguments": {}}}],
                    "usage": {"inputTokens": 3, "outputTokens": 1},
                },
                {"http_error": {"status": 503, "retry_after": 2}},
            ]
        )
    )
    record = tmp_path / "requests.jsonl"
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "dsh.testing.openai_server",
        "--script",
        str(script),
        "--port",
        "0",
        "--record",
        str(record),
        stdout=asyncio.subprocess.PIPE,
    )
    try:
        assert proc.stdout is not None
        url = (await asyncio.wait_for(proc.stdout.readline(), 20)).decode().strip()
        assert url.startswith("http://127.0.0.1:")
        import httpx

        async with httpx.AsyncClient(base_url=url) as client:
            body = {"model": "m", "messages": [], "stream": False}
            first = (await client.post("/chat/completions", json=body)).json()
            assert first["choices"][0]["message"]["content"] == "plain text"
            second = (await client.post("/chat/completions", json=body)).json()
            message = second["choices"][0]["message"]
            assert message["reasoning_content"] == "hm"
            assert message["tool_calls"][0]["function"]["name"] == "ls"
            assert second["usage"]["prompt_tokens"] == 3
            third = await client.post(
                "/chat/completions", json=body, headers={"Authorization": "Bearer sk-x"}
            )
            assert third.status_code == 503 and third.headers["retry-after"] == "2"
        lines = [json.loads(line) for line in record.read_text().splitlines()]
        assert [line["n"] for line in lines] == [1, 2, 3]
        assert lines[2]["headers"]["authorization"] == "<redacted>"
    finally:
        proc.terminate()
        assert await asyncio.wait_for(proc.wait(), 20) == 0


def test_load_server_script_reports_the_path() -> None:
    from dsh.testing.openai_server import load_server_script

    with pytest.raises(ValueError, match=r"script\[1\]\.parts\[0\]"):
        load_server_script(["ok", {"parts": [{"unknown": 1}]}])
    entries = load_server_script([{"malformed": {"parts": ["x"]}}, "y"])
    assert len(entries) == 2 and entries[1] == "y"
    with pytest.raises(ValueError, match=r"script\[0\]: unknown key 'tool'"):
        load_server_script([{"tool": "read"}])  # not an empty reply


def test_a_bad_server_script_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from dsh.testing.openai_server import main

    script = tmp_path / "script.json"
    script.write_text('[{"tool_call": {"name": "read"}}]')
    assert main(["--script", str(script)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "script[0]: unknown key 'tool_call'" in err


async def test_concurrent_calls_share_one_client(harness: Harness) -> None:
    harness.server.add(reply("slow one", delay=0.01), reply("slow two", delay=0.01))
    await harness.mount()
    first, second = await asyncio.gather(harness.call(), harness.call())
    texts = sorted(b.text for c in (first, second) for b in c.assembler.blocks())  # type: ignore[union-attr]
    assert texts == ["slow one", "slow two"]
    assert harness.server.connections == 2  # two connections, in parallel
