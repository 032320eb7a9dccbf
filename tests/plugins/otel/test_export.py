"""Exporters from the `OTEL_*` variables, OTLP/HTTP to a real loopback receiver, the JSON-RPC
trace context, and what is imported when tracing is off."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

import dsh
from dsh.agent import AgentOptions, CreateAgentOptions, run_prompt
from dsh.llm import TokenUsage
from dsh.profiles import (
    CORE_ROWS,
    DEFAULT_ROWS,
    OTEL_ROW,
    CompositionError,
    boot,
    default_rows,
    load_profile,
    with_otel,
)
from dsh.server import JsonRpcServer
from dsh.server._protocol import Request
from dsh.session import SessionMeta
from dsh.testing import ScriptedModel, reply, tool_call
from dsh.tools import tool

from .conftest import Traced
from .support import Receiver, grpc_receiving, receiving, values

PARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with receiving() as running:
        yield running


@tool
def shout(text: str) -> str:
    """Upper-case a text."""
    return text.upper()


@pytest.mark.parametrize("protocol", ["http/protobuf", "grpc"])
async def test_traces_and_metrics_reach_an_otlp_endpoint(
    protocol: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with grpc_receiving() if protocol == "grpc" else receiving() as receiver:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", protocol)
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url)
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_INSECURE", "true")  # gRPC: no TLS on loopback
        monkeypatch.setenv("OTEL_SERVICE_NAME", "otel-test")
        monkeypatch.setenv("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=test")
        for name in ("OTEL_TRACES_EXPORTER", "OTEL_METRICS_EXPORTER"):
            monkeypatch.delenv(name, raising=False)
        await _run_traced_tool_loop()
    _check_exported(receiver)


async def _run_traced_tool_loop() -> None:
    async with boot(load_profile(base=[*CORE_ROWS, OTEL_ROW])) as ctx:
        model = ScriptedModel(
            [reply(tool_call("shout", {"text": "a"}), usage=TokenUsage(40, 5, 60)), reply("A")]
        )
        model.install(ctx)
        ctx.tools.register(shout)
        options = CreateAgentOptions(
            "session-otlp",
            SessionMeta(cwd="/tmp"),
            agent_options=AgentOptions(provider="scripted", model="scripted"),
        )
        async with ctx.agents.create(options) as handle:
            await run_prompt(handle.agent, "shout a")


def _check_exported(receiver: Receiver) -> None:
    """Disposal flushed and shut the exporters down: everything has been sent."""
    spans = receiver.spans()
    resource, scope, _ = spans[0]
    assert values(resource.resource.attributes)["service.name"] == "otel-test"
    assert values(resource.resource.attributes)["deployment.environment"] == "test"
    assert scope.name == "dsh"
    by_name = {span.name: span for _, _, span in spans}
    assert set(by_name) == {"invoke_agent dsh", "chat scripted", "execute_tool shout"}
    turn = by_name["invoke_agent dsh"]
    assert len(spans) == 4 and {s.trace_id for _, _, s in spans} == {turn.trace_id}
    assert by_name["execute_tool shout"].parent_span_id == turn.span_id
    first = values(next(s for _, _, s in spans if s.name == "chat scripted").attributes)
    assert first["gen_ai.operation.name"] == "chat"
    assert first["gen_ai.usage.input_tokens"] == 100
    assert first["gen_ai.response.finish_reasons"] == ["tool_calls"]
    assert values(turn.attributes)["gen_ai.conversation.id"] == "session-otlp"
    metrics = {m.name: m for m in receiver.metrics()}
    tokens = metrics["gen_ai.client.token.usage"].histogram.data_points
    # One answer reported usage (the cache counts as input); the other reported none.
    by_type = {values(p.attributes)["gen_ai.token.type"]: (p.count, p.sum) for p in tokens}
    assert by_type == {"input": (1, 100), "output": (1, 5)}
    assert metrics["gen_ai.client.operation.duration"].unit == "s"


CONSOLE = """
import asyncio, dsh
from dsh.profiles import CORE_ROWS, OTEL_ROW
from dsh.testing import ScriptedModel, reply

async def main():
    async with dsh.boot(dsh.load_profile(base=[*CORE_ROWS, OTEL_ROW])) as ctx:
        ScriptedModel([reply("hello")]).install(ctx)
        options = dsh.CreateAgentOptions(
            "s", agent_options=dsh.AgentOptions(provider="scripted", model="scripted")
        )
        async with ctx.agents.create(options) as handle:
            await dsh.run_prompt(handle.agent, "hi")

asyncio.run(main())
"""


def test_the_console_exporters_print_spans_and_metrics(tmp_path: Any) -> None:
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "OTEL_TRACES_EXPORTER": "console",
        "OTEL_METRICS_EXPORTER": "console",
    }
    result = subprocess.run(
        [sys.executable, "-c", CONSOLE], capture_output=True, text=True, env=env, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""  # stdout is for answers and protocol frames
    assert '"name": "invoke_agent dsh"' in result.stderr
    assert '"name": "chat scripted"' in result.stderr
    assert '"name": "gen_ai.client.operation.duration"' in result.stderr


async def test_a_json_rpc_prompt_continues_the_callers_trace(traced: Traced) -> None:
    frames: list[Any] = []
    server = JsonRpcServer(traced.ctx, frames.append)
    traced.model.add(reply("traced"))
    init = {"cwd": "/tmp", "provider": "scripted", "model": "scripted"}
    await server.call(Request("initialize", init, 1))
    params = {
        "sessionId": "session-rpc",
        "contentBlocks": [{"type": "text", "text": "hi"}],
        "_meta": {"traceparent": PARENT, "tracestate": "a=1"},
    }
    await server.call(Request("session/prompt", params, 2))
    await server.handles["session-rpc"].agent.when_idle()
    (turn,) = traced.named("invoke_agent")
    assert f"{turn.context.trace_id:032x}" == PARENT[3:35]
    assert f"{turn.parent.span_id:016x}" == PARENT[36:52]
    await server.shutdown()


async def test_exporter_names_are_checked() -> None:
    row = {**OTEL_ROW, "config": {"traces_exporter": "zipkin"}}
    with pytest.raises(CompositionError, match="traces_exporter: unknown exporter 'zipkin'"):
        await boot(load_profile(base=[*CORE_ROWS, row]))


async def test_an_unknown_protocol_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")
    monkeypatch.setenv("OTEL_METRICS_EXPORTER", "none")
    monkeypatch.delenv("OTEL_TRACES_EXPORTER", raising=False)
    with pytest.raises(CompositionError, match=r"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL.*http/json"):
        await boot(load_profile(base=[*CORE_ROWS, OTEL_ROW]))


def test_dsh_otel_and_the_flag_add_the_row() -> None:
    assert default_rows({}) == DEFAULT_ROWS
    assert default_rows({"DSH_OTEL": "1"})[-1] == OTEL_ROW
    assert default_rows({"DSH_OTEL": "0"}) == DEFAULT_ROWS
    profile = with_otel(load_profile(base=CORE_ROWS))
    assert [r.id for r in profile.rows][:3] == ["llm", "sessions", "otel"]  # after the store
    disabled = load_profile(base=[*CORE_ROWS, {**OTEL_ROW, "disabled": True}])
    row = with_otel(disabled).row("otel")
    assert row is not None and not row.disabled


NO_OTEL = """
import asyncio, sys
import dsh, dsh.plugins.otel
from dsh.testing import ScriptedModel, reply

async def main(rows, id):
    profile = dsh.load_profile(base=rows) if rows else dsh.load_profile()
    async with dsh.boot(profile) as ctx:
        ScriptedModel([reply("hi")]).install(ctx)
        options = dsh.CreateAgentOptions(
            id, agent_options=dsh.AgentOptions(provider="scripted", model="scripted")
        )
        async with ctx.agents.create(options) as handle:
            await dsh.run_prompt(handle.agent, "hi")

from dsh.profiles import DEFAULT_ROWS, OTEL_ROW
asyncio.run(main(None, "s1"))
asyncio.run(main([*DEFAULT_ROWS, OTEL_ROW], "s2"))  # loaded, but OTEL_SDK_DISABLED=true
print(sorted(m for m in sys.modules if m.startswith("opentelemetry")))
"""


def test_nothing_of_opentelemetry_is_imported_when_tracing_is_off(tmp_path: Any) -> None:
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "DSH_SESSION_ROOT": str(tmp_path / "sessions"),
        "OTEL_SDK_DISABLED": "true",
    }
    result = subprocess.run(
        [sys.executable, "-c", NO_OTEL], capture_output=True, text=True, env=env, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


LIGHT = """
import sys, dsh
names = [getattr(dsh, name) for name in dsh.__all__]  # the whole public API, loaded
import dsh.plugins.otel
from dsh.testing import ScriptedModel
assert dsh.Agent(ScriptedModel()).profile.row("otel") is not None  # asked for, not started
print(sorted(m for m in sys.modules if m.startswith("opentelemetry")))
"""


def test_import_dsh_imports_no_opentelemetry_even_with_dsh_otel_set(tmp_path: Any) -> None:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "DSH_OTEL": "1"}
    result = subprocess.run(
        [sys.executable, "-c", LIGHT], capture_output=True, text=True, env=env, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


async def test_dsh_otel_traces_a_library_agent(
    receiver: Receiver, monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    monkeypatch.setenv("DSH_OTEL", "1")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url)
    monkeypatch.setenv("OTEL_METRICS_EXPORTER", "none")
    for name in ("OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_SDK_DISABLED"):
        monkeypatch.delenv(name, raising=False)
    async with dsh.Agent(ScriptedModel(["Traced."]), cwd=tmp_path) as agent:
        result = await agent.run("hi")
    # Closing the agent flushed its exporter: the turn and its model call have been posted.
    turns = [span for _, _, span in receiver.spans() if span.name.startswith("invoke_agent")]
    (turn,) = turns
    assert values(turn.attributes)["gen_ai.conversation.id"] == result.session_id
    chats = [span for _, _, span in receiver.spans() if span.name.startswith("chat")]
    assert [chat.parent_span_id for chat in chats] == [turn.span_id]


def test_a_missing_extra_is_one_line_naming_it(tmp_path: Any) -> None:
    code = (
        "import sys; sys.modules['opentelemetry'] = None\n"
        "import asyncio, dsh\n"
        "from dsh.profiles import CORE_ROWS, OTEL_ROW\n"
        "try:\n"
        "    asyncio.run(dsh.boot(dsh.load_profile(base=[*CORE_ROWS, OTEL_ROW])))\n"
        "except dsh.CompositionError as exc:\n"
        "    print(exc)\n"
    )
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60
    )
    assert "dsh's otel extra: pip install 'opentelemetry-" in result.stdout, result.stderr
    assert len(result.stdout.strip().splitlines()) == 1


def test_the_variables_choose_the_exporters() -> None:
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as Grpc
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
    from opentelemetry.sdk.trace.export import ConsoleSpanExporter

    from dsh.plugins.otel._exporters import metric_exporters, span_exporters

    grpc = {"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_TRACES_EXPORTER": "otlp,console"}
    assert [type(e) for e in span_exporters(None, grpc)] == [Grpc, ConsoleSpanExporter]
    http = {**grpc, "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL": "http/protobuf"}
    assert [type(e) for e in metric_exporters(None, http)] == [OTLPMetricExporter]
    assert span_exporters("none", grpc) == []
    assert metric_exporters(None, {"OTEL_METRICS_EXPORTER": "none"}) == []
