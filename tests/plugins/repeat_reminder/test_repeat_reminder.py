from dsh.agent import run_prompt
from dsh.llm import Message
from dsh.plugins.repeat_reminder import PLUGIN_ID, RepeatReminderPlugin
from dsh.testing import reply, tool_call
from dsh.tools import tool
from tests.conftest import Runtime, types


async def test_the_third_identical_call_gets_a_notice(runtime: Runtime) -> None:
    await runtime.ctx.plugin(RepeatReminderPlugin)

    @tool
    def read(path: str) -> str:
        """Read."""
        return "same"

    runtime.ctx.tools.register(read)
    for _ in range(3):
        runtime.model.add(reply(tool_call("read", {"path": "a"})))
    runtime.model.add(reply(tool_call("read", {"path": "b"})), "done")
    agent = await runtime.agent()
    await run_prompt(agent, "go")
    notices = [
        Message.from_json(m)
        for e in agent.session.events
        if e.type == "agent/inbox/spliced"
        for m in e.data["inserted"]
        if m["source"].get("plugin") == PLUGIN_ID
    ]
    assert len(notices) == 1
    assert notices[0].source == {
        "kind": "plugin",
        "plugin": PLUGIN_ID,
        "form": "notice",
        "summary": "read \u00d7 3",
    }
    fourth = runtime.model.requests[3].messages
    assert fourth[-1].source.get("plugin") == PLUGIN_ID  # it reached the next request
    kinds = types(agent)
    result_at = [i for i, k in enumerate(kinds) if k == "tool/result"][2]
    assert kinds[result_at + 1] == "agent/inbox/spliced"


async def test_a_new_prompt_resets_the_count(runtime: Runtime) -> None:
    await runtime.ctx.plugin(RepeatReminderPlugin)

    @tool
    def ping() -> str:
        """Ping."""
        return "pong"

    runtime.ctx.tools.register(ping)
    runtime.model.add(reply(tool_call("ping")), reply(tool_call("ping")), "one")
    runtime.model.add(reply(tool_call("ping")), "two")
    agent = await runtime.agent()
    await run_prompt(agent, "first")
    await run_prompt(agent, "second")
    assert not any(
        m["source"].get("plugin") == PLUGIN_ID
        for e in agent.session.events
        if e.type == "agent/inbox/spliced"
        for m in e.data["inserted"]
    )
