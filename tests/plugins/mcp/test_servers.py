"""MCP servers' tools through the real loop: a stdio child and a streamable HTTP server,
both the SDK server in `server.py`, with a scripted model."""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path
from typing import Any

from dsh import Context
from dsh.agent import USER_CANCEL, run_prompt
from dsh.llm import TextBlock
from dsh.plugins.mcp import connect_servers, parse_servers
from dsh.testing import reply, tool_call
from dsh.workspace import Trust

from .support import ROOT, LineWatch, stdio_server, write_mcp_json


def results(agent: Any) -> list[dict[str, Any]]:
    """Each logged tool result block (`{toolCallId, content, isError?}`), in order."""
    return [
        dict(e.data["message"]["content"][0])
        for e in agent.session.events
        if e.type == "tool/result"
    ]


def result_text(data: dict[str, Any]) -> str:
    return "\n".join(b.get("text", "") for b in data["content"] if b["type"] == "text")


async def test_stdio_tool_round_trip(workspace: Path, runtime_factory: Any) -> None:
    rt = await runtime_factory(workspace, {"mcpServers": {"calc": stdio_server()}})
    agent = await rt.agent(workspace)
    assert [s.state for s in rt.hub.statuses()] == ["pending"]  # started by the first turn
    rt.model.add(reply(tool_call("mcp__calc__add", {"a": 2, "b": 3})), reply("5"))
    result = await run_prompt(agent, "add 2 and 3")
    assert result.finish_reason == "completed"
    (data,) = results(agent)
    assert result_text(data) == "5" and not data.get("isError")
    request = rt.model.requests[0]
    schema = next(t for t in request.tools if t.name == "mcp__calc__add")
    assert schema.description == "Add two integers."
    assert schema.parameters == {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
    }


async def test_remote_round_trip(
    workspace: Path, runtime_factory: Any, http_server: tuple[str, str]
) -> None:
    transport, url = http_server
    servers = {"web": {"type": transport, "url": url}}
    rt = await runtime_factory(workspace, {"mcpServers": servers})
    agent = await rt.agent(workspace)
    rt.model.add(reply(tool_call("mcp__web__echo", {"text": "hi", "shout": True})), reply("ok"))
    result = await run_prompt(agent, "echo")
    assert result.finish_reason == "completed"
    assert result_text(results(agent)[0]) == "HI"
    (status,) = rt.hub.statuses()
    assert (status.transport, status.state, status.target) == (transport, "ready", url)


async def test_a_call_carries_the_trace_context_of_its_tool_span(
    workspace: Path, runtime_factory: Any, http_server: tuple[str, str]
) -> None:
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from dsh.kernel import TraceContext, using_trace
    from dsh.plugins.otel import TELEMETRY, OtelPlugin

    transport, url = http_server
    rt = await runtime_factory(workspace, {"mcpServers": {"web": {"type": transport, "url": url}}})
    quiet = {"traces_exporter": "none", "metrics_exporter": "none"}
    await rt.ctx.plugin(OtelPlugin, quiet)
    spans = InMemorySpanExporter()
    rt.ctx.require(TELEMETRY).add_span_processor(SimpleSpanProcessor(spans))
    agent = await rt.agent(workspace)
    rt.model.add(reply(tool_call("mcp__web__traceparent")), reply("ok"))
    caller = TraceContext("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
    with using_trace(caller):
        agent.followup("which trace?")
    await agent.when_idle()
    (tool,) = [s for s in spans.get_finished_spans() if s.name.startswith("execute_tool")]
    sent = result_text(results(agent)[0])
    # The server saw the tool's span, in the caller's trace.
    assert sent == TraceContext.of(tool.context.trace_id, tool.context.span_id).traceparent
    assert sent[3:35] == caller.traceparent[3:35]


async def test_results_map_to_content_blocks(workspace: Path, runtime_factory: Any) -> None:
    rt = await runtime_factory(workspace, {"mcpServers": {"t": stdio_server()}})
    agent = await rt.agent(workspace)
    rt.model.add(reply(tool_call("mcp__t__picture", {})), reply("seen"))
    await run_prompt(agent, "show")
    content = results(agent)[0]["content"]
    assert content[0] == {"type": "text", "text": "a picture:"}
    assert content[1]["type"] == "image"
    assert content[1]["attachment"]["mediaType"] == "image/png"
    assert content[2] == {"type": "text", "text": "[resource link] memo://one one (text/plain)"}
    assert content[3] == {"type": "text", "text": "[resource memo://two]\ninline memo"}


async def test_error_result_is_an_error_the_model_sees(
    workspace: Path, runtime_factory: Any
) -> None:
    rt = await runtime_factory(workspace, {"mcpServers": {"t": stdio_server()}})
    agent = await rt.agent(workspace)
    rt.model.add(reply(tool_call("mcp__t__fail", {"reason": "boom"})), reply("sorry"))
    await run_prompt(agent, "fail")
    (data,) = results(agent)
    assert data["isError"] is True
    assert data["content"] == [{"type": "text", "text": "Error: failed: boom"}]
    sent = rt.model.requests[1].messages[-1].content[0]
    assert sent.is_error and sent.content == (TextBlock("Error: failed: boom"),)


async def test_a_crash_mid_call_is_an_error_then_the_server_restarts(
    workspace: Path, runtime_factory: Any
) -> None:
    rt = await runtime_factory(workspace, {"mcpServers": {"t": stdio_server()}})
    agent = await rt.agent(workspace)
    rt.model.add(reply(tool_call("mcp__t__crash", {})), reply("it crashed"))
    await run_prompt(agent, "crash it")
    (data,) = results(agent)
    assert data["isError"] is True
    text = result_text(data)
    assert 'MCP server "t" stopped during the call' in text
    assert 'stderr: "crashing now"' in text and "being restarted" in text
    restarted = await rt.status("t", lambda s: s.state == "ready" and s.restarts == 1)
    assert "mcp__t__add" in restarted.tools
    rt.model.add(reply(tool_call("mcp__t__add", {"a": 1, "b": 1})), reply("2"))
    await run_prompt(agent, "add")
    assert result_text(results(agent)[1]) == "2"


async def test_list_changed_refreshes_the_tools(workspace: Path, runtime_factory: Any) -> None:
    rt = await runtime_factory(workspace, {"mcpServers": {"t": stdio_server()}})
    agent = await rt.agent(workspace)
    rt.model.add(reply(tool_call("mcp__t__grow", {})), reply("grown"))
    await run_prompt(agent, "grow")
    await rt.status("t", lambda s: "mcp__t__fresh" in s.tools)
    rt.model.add(reply(tool_call("mcp__t__fresh", {})), reply("fresh"))
    await run_prompt(agent, "use the new tool")
    assert "mcp__t__fresh" in [t.name for t in rt.model.requests[2].tools]
    assert result_text(results(agent)[1]) == "fresh!"


async def test_cancel_during_a_slow_tool_cancels_the_request(
    workspace: Path, runtime_factory: Any
) -> None:
    rt = await runtime_factory(workspace, {"mcpServers": {"t": stdio_server()}})
    agent = await rt.agent(workspace)
    watch = LineWatch("slow started")
    logging.getLogger("dsh.mcp.t").addHandler(watch)
    logging.getLogger("dsh.mcp.t").setLevel(logging.INFO)
    try:
        rt.model.add(reply(tool_call("mcp__t__slow", {})))
        agent.followup("wait")
        await watch.seen
        agent.cancel(USER_CANCEL)
        await agent.when_idle()
    finally:
        logging.getLogger("dsh.mcp.t").removeHandler(watch)
    assert results(agent)[0]["isError"] is True
    rt.model.add(reply(tool_call("mcp__t__was_cancelled", {})), reply("yes"))
    await run_prompt(agent, "was it cancelled?")
    assert result_text(results(agent)[1]) == "true"  # notifications/cancelled reached it


async def test_the_tool_timeout_policy_bounds_a_call(workspace: Path, runtime_factory: Any) -> None:
    rt = await runtime_factory(workspace, {"mcpServers": {"t": stdio_server(timeout=300)}})
    agent = await rt.agent(workspace)
    rt.model.add(reply(tool_call("mcp__t__slow", {})), reply("too slow"))
    await run_prompt(agent, "wait")
    assert result_text(results(agent)[0]) == "Error: tool call timed out after 300ms"
    rt.model.add(reply(tool_call("mcp__t__was_cancelled", {})), reply("yes"))
    await run_prompt(agent, "was it cancelled?")
    assert result_text(results(agent)[1]) == "true"


async def test_a_server_that_cannot_start_leaves_the_agent_working(
    workspace: Path, runtime_factory: Any
) -> None:
    missing = workspace / "no-such-server"
    servers = {"missing": {"command": str(missing)}, "t": stdio_server()}
    rt = await runtime_factory(workspace, {"mcpServers": servers})
    agent = await rt.agent(workspace)
    rt.model.add(reply("hello"))
    result = await run_prompt(agent, "hi")
    assert result.finish_reason == "completed"
    names = [t.name for t in rt.model.requests[0].tools]
    assert "mcp__t__add" in names and not any(n.startswith("mcp__missing") for n in names)
    status = {s.name: s for s in rt.hub.statuses()}["missing"]
    assert status.state == "failed"
    assert status.error == f"cannot run '{missing}': No such file or directory"


async def test_a_server_that_never_answers_fails_after_the_startup_timeout(
    workspace: Path, runtime_factory: Any
) -> None:
    servers = {"mute": {"command": "sleep", "args": ["600"]}}
    rt = await runtime_factory(workspace, {"mcpServers": servers, "startup_timeout_ms": 300})
    agent = await rt.agent(workspace)
    rt.model.add(reply("hello"))
    assert (await run_prompt(agent, "hi")).finish_reason == "completed"
    status = await rt.status("mute", lambda s: s.state == "failed")
    assert status.error == "it did not finish starting within 0.3s"


async def test_mcp_tools_ask_by_default_and_a_server_may_allow(
    workspace: Path, runtime_factory: Any
) -> None:
    servers = {"asks": stdio_server(), "trusted": stdio_server(approval="allow")}
    rt = await runtime_factory(workspace, {"mcpServers": servers}, approval={})
    agent = await rt.agent(workspace)
    rt.model.add(
        reply(
            tool_call("mcp__asks__add", {"a": 1, "b": 2}),
            tool_call("mcp__trusted__add", {"a": 1, "b": 2}),
        ),
        reply("done"),
    )
    await run_prompt(agent, "add twice")
    asked, allowed = results(agent)
    assert result_text(asked).startswith('Error: tool "mcp__asks__add" needs the user\'s approval')
    assert result_text(allowed) == "3"


async def test_policy_rows_with_globs_win_over_server_defaults(
    workspace: Path, runtime_factory: Any
) -> None:
    policy = {"policy": [{"tool": "mcp__trusted__*", "action": "deny"}], "auto_approve": True}
    servers = {"trusted": stdio_server(approval="allow")}
    rt = await runtime_factory(workspace, {"mcpServers": servers}, approval=policy)
    agent = await rt.agent(workspace)
    rt.model.add(reply(tool_call("mcp__trusted__add", {"a": 1, "b": 2})), reply("denied"))
    await run_prompt(agent, "add")
    assert result_text(results(agent)[0]) == (
        'Error: tool "mcp__trusted__add" is denied by the approval policy (rule "mcp__trusted__*")'
    )


async def test_servers_connected_for_one_agent_only(workspace: Path, runtime_factory: Any) -> None:
    rt = await runtime_factory(workspace)
    specs = parse_servers({"mine": stdio_server()}, "test", base=workspace, env=None)

    def setup(agent_ctx: Context) -> None:
        connect_servers(agent_ctx, specs)  # owned by the agent: gone with it

    first = await rt.agent(workspace, setup=setup)
    second = await rt.agent(workspace)
    rt.model.add(reply(tool_call("mcp__mine__add", {"a": 2, "b": 2})), reply("4"), reply("none"))
    await run_prompt(first, "add")
    await run_prompt(second, "anything?")
    assert result_text(results(first)[0]) == "4"
    assert "mcp__mine__add" in [t.name for t in rt.model.requests[0].tools]
    assert not any(t.name.startswith("mcp__") for t in rt.model.requests[2].tools)
    (status,) = rt.hub.statuses()
    assert status.scoped and status.name == "mine"


async def test_resources_can_be_listed_and_read(workspace: Path, runtime_factory: Any) -> None:
    rt = await runtime_factory(workspace, {"mcpServers": {"t": stdio_server()}})
    agent = await rt.agent(workspace)
    rt.model.add(
        reply(tool_call("mcp_list_resources", {})),
        reply(tool_call("mcp_read_resource", {"server": "t", "uri": "memo://one"})),
        reply("read"),
    )
    await run_prompt(agent, "what resources?")
    listed, read = results(agent)
    assert result_text(listed) == "t: memo://one one \u2014 The first memo (text/plain)"
    assert result_text(read) == "[resource memo://one]\nmemo one"


async def test_untrusted_workspace_servers_do_not_start(
    workspace: Path, runtime_factory: Any
) -> None:
    write_mcp_json(workspace, {"repo": stdio_server()})
    rt = await runtime_factory(workspace)
    (status,) = rt.hub.statuses()
    assert (status.name, status.state) == ("repo", "untrusted")
    assert rt.hub.visible(None) == []
    Trust().trust(workspace)
    trusted = await runtime_factory(workspace, {"startup": "boot"})
    await trusted.status("repo")  # started with the plugin, no turn needed


async def test_variables_expand_and_a_missing_one_fails_that_server(
    workspace: Path, runtime_factory: Any, monkeypatch: Any
) -> None:
    monkeypatch.setenv("MCP_TEST_GREETING", "hello")
    servers = {
        "t": stdio_server(env={"PYTHONPATH": str(ROOT), "GREETING": "${MCP_TEST_GREETING}"}),
        "u": stdio_server(env={"TOKEN": "${MCP_TEST_UNSET_TOKEN}"}),
    }
    write_mcp_json(workspace, servers)
    Trust().trust(workspace)
    rt = await runtime_factory(workspace)
    agent = await rt.agent(workspace)
    rt.model.add(reply(tool_call("mcp__t__env_value", {"name": "GREETING"})), reply("ok"))
    await run_prompt(agent, "greeting?")
    assert result_text(results(agent)[0]) == "hello"
    failed = {s.name: s for s in rt.hub.statuses()}["u"]
    assert failed.state == "failed"
    assert failed.error == (
        f"{workspace / '.mcp.json'}: mcpServers.u.env.TOKEN: "
        "environment variable MCP_TEST_UNSET_TOKEN is not set"
    )


async def test_unloading_stops_the_server_process(workspace: Path, runtime_factory: Any) -> None:
    rt = await runtime_factory(workspace, {"mcpServers": {"t": stdio_server()}})
    agent = await rt.agent(workspace)
    rt.model.add(reply(tool_call("mcp__t__pid", {})), reply("pid"))
    await run_prompt(agent, "pid?")
    pid = int(result_text(results(agent)[0]))
    hub = rt.hub
    await rt.ctx.owner.dispose()
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        pass
    else:
        raise AssertionError(f"server process {pid} is still alive")
    assert [s.state for s in hub.statuses()] == []  # detached: nothing is connected


async def test_without_the_sdk_a_server_fails_naming_the_extra(
    workspace: Path, runtime_factory: Any, monkeypatch: Any
) -> None:
    monkeypatch.setitem(sys.modules, "mcp", None)  # as if `dsh[mcp]` were not installed
    monkeypatch.delitem(sys.modules, "dsh.plugins.mcp._transport", raising=False)
    rt = await runtime_factory(workspace, {"mcpServers": {"t": stdio_server()}})
    agent = await rt.agent(workspace)
    rt.model.add(reply("fine without it"))
    assert (await run_prompt(agent, "hi")).finish_reason == "completed"
    (status,) = rt.hub.statuses()
    assert (status.state, status.error) == (
        "failed",
        "the MCP SDK is not installed (dsh's mcp extra): pip install 'mcp>=2.3' "
        "(pipx: pipx inject dsh 'mcp>=2.3')",
    )


async def test_a_server_that_crashes_too_often_stays_failed_without_its_tools(
    workspace: Path, runtime_factory: Any
) -> None:
    rt = await runtime_factory(workspace, {"mcpServers": {"t": stdio_server()}, "max_restarts": 0})
    agent = await rt.agent(workspace)
    rt.model.add(reply(tool_call("mcp__t__crash", {})), reply("gone"), reply("still here"))
    await run_prompt(agent, "crash it")
    assert result_text(results(agent)[0]).endswith("; it is not running")
    (status,) = rt.hub.statuses()
    assert status.state == "failed" and status.tools == ()
    assert status.error is not None and status.error.endswith("gave up after 0 restarts")
    await run_prompt(agent, "anything left?")
    assert not any(t.name.startswith("mcp__t__") for t in rt.model.requests[2].tools)
