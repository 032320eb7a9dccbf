from dsh.agent import run_prompt
from dsh.testing import reply, tool_call
from dsh.tools import tool
from tests.conftest import Runtime, turn_end, types


async def test_one_turn_text_answer(runtime: Runtime) -> None:
    runtime.model.add(reply("Hello there."))
    agent = await runtime.agent()
    result = await run_prompt(agent, "Hi")
    assert result.text == "Hello there."
    assert result.finish_reason == "completed"
    assert types(agent) == [
        "agent/inbox/spliced",
        "turn/start",
        "agent/inbox/spliced",
        "step/start",
        "user/message",
        "request/header",
        "request/context",
        "assistant/chunk",  # block-start
        "assistant/chunk",  # the text's deltas, which arrived together: one
        "assistant/chunk",  # block-end
        "assistant/chunk",  # finish
        "assistant/message",
        "step/end",
        "turn/end",
    ]
    runtime.model.assert_complete()


async def test_tool_loop(runtime: Runtime) -> None:
    @tool
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    runtime.ctx.tools.register(add)
    runtime.model.add(reply(tool_call("add", {"a": 2, "b": 3})), reply("It is 5."))
    agent = await runtime.agent()
    result = await run_prompt(agent, "2+3?")
    assert result.text == "It is 5."
    assert turn_end(agent) == {"kind": "completed"}
    second = runtime.model.requests[1]
    assert second.messages[-1].content[0].content[0].text == "5"  # type: ignore[union-attr]
    assert [t.name for t in second.tools] == ["add"]
