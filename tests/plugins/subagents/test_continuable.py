"""Continuable subagents: a background child answers through a notice, is continued with
`send_message`, listed and interrupted, survives its parent's turns and dies with it."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

from dsh.agent import run_prompt
from dsh.llm import GenerateOptions, Message
from dsh.loop import ReactLoopAgent
from dsh.plugins.subagents import NOTICE_PLUGIN, SubagentsPlugin
from dsh.session import SessionEvent
from dsh.testing import hold, reply, tool_call, until
from tests.conftest import Runtime

CHILD_TASK = "Count the TODOs in src/."
START = {"description": "count todos", "prompt": CHILD_TASK, "run_in_background": True}


def router(parent: Iterator[Any], child: Iterator[Any]) -> Any:
    """A script entry: the child's requests (its first message is the task) take the child's
    next reply, the parent's the parent's."""

    def entry(options: GenerateOptions) -> Any:
        return next(child if options.messages[0].text == CHILD_TASK else parent)

    return entry


def tool_texts(agent: ReactLoopAgent) -> list[str]:
    out = []
    for event in agent.session.events:
        if event.type == "tool/result":
            block = Message.from_json(event.data["message"]).content[0]
            out.append("".join(getattr(b, "text", "") for b in getattr(block, "content", ())))
    return out


def is_notice(event: SessionEvent) -> bool:
    return event.type == "user/message" and event.data["source"].get("plugin") == NOTICE_PLUGIN


def turn_ended(turn: int) -> Any:
    return lambda e: e.type == "turn/end" and e.data["turn"] == turn


async def test_send_message_to_a_finished_child_continues_it(runtime: Runtime) -> None:
    await runtime.ctx.plugin(SubagentsPlugin)
    first, second = hold(), hold()
    parent_replies = iter(
        [
            reply(tool_call("subagent", START)),
            "It is counting.",
            reply(tool_call("send_message", {"agent_id": "subagent-1", "message": "Now x2."})),
            "Asked for the double.",
            "Final: 84.",
        ]
    )
    child_replies = iter([reply(first, "42"), reply(second, "84")])
    runtime.model.add(*[router(parent_replies, child_replies)] * 7)
    parent = await runtime.agent()
    await run_prompt(parent, "count them in the background")
    first.release()  # the child answers once its parent's turn is over
    await until(parent, turn_ended(2))  # woken by the notice, it continued the child
    second.release()
    await until(parent, turn_ended(3))
    started, sent = tool_texts(parent)
    assert started == (
        "started subagent subagent-1 in the background; its answer arrives as a notice when "
        "it is done"
    )
    assert sent == "sent to subagent-1; it reads it now, and its answer arrives as a notice"
    notices = [Message.from_json(e.data).text for e in parent.session.events if is_notice(e)]
    assert notices == [
        "subagent subagent-1 (count todos) finished [completed]:\n42\n"
        "(send_message continues it; it keeps its context)",
        "subagent subagent-1 (count todos) finished [completed]:\n84\n"
        "(send_message continues it; it keeps its context)",
    ]
    child_requests = [r for r in runtime.model.requests if r.messages[0].text == CHILD_TASK]
    continued = child_requests[1]  # the child's second request holds its whole context
    assert [m.text for m in continued.messages] == [CHILD_TASK, "42", "Now x2."]
    [child_id] = [
        a.id for a in runtime.ctx.agents.list() if a.session.header.parent_session == parent.id
    ]
    descriptor = next(
        e
        for e in runtime.ctx.agents.get(child_id).session.events  # type: ignore[union-attr]
        if e.type == "subagent/descriptor"
    )
    assert descriptor.data["mode"] == "continuable"
    await runtime.handles.pop().dispose()  # the parent goes, and its child with it
    assert runtime.ctx.agents.get(child_id) is None


async def test_list_and_interrupt(runtime: Runtime) -> None:
    await runtime.ctx.plugin(SubagentsPlugin)
    parent_replies = itertools.chain(
        [
            reply(tool_call("subagent", START)),
            reply(tool_call("list_agents", {})),
            reply(tool_call("interrupt_agent", {"agent_id": "subagent-1"})),
            reply(tool_call("interrupt_agent", {"agent_id": "subagent-1"})),
            reply(tool_call("send_message", {"agent_id": "subagent-9", "message": "hi"})),
            reply(tool_call("list_agents", {})),
        ],
        itertools.repeat("Done."),  # the notice may wake it once more
    )
    child_replies = iter([reply("counting…", hang=True)])
    runtime.model.add(*[router(parent_replies, child_replies)] * 10)
    parent = await runtime.agent()
    parent.followup("start and stop a helper")
    await until(parent, turn_ended(1))
    await until(parent, is_notice)  # the interrupted child reported
    _, listed, stopped, again, unknown, listed_after = tool_texts(parent)[:6]
    assert listed == "subagent-1 (count todos): working"
    assert stopped == "interrupted subagent-1; its notice says what it had done"
    assert again in ("subagent-1 was not working", stopped)
    assert unknown == 'Error: no subagent "subagent-9" of this agent (yours: subagent-1)'
    assert listed_after.startswith("subagent-1 (count todos): ")
    notice = next(Message.from_json(e.data).text for e in parent.session.events if is_notice(e))
    assert notice.startswith("subagent subagent-1 (count todos) finished [aborted]")
