"""A scripted agent on the default profile reads, edits and runs bash in a real workspace."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from dsh.agent import AgentOptions, CreateAgentOptions, run_prompt
from dsh.llm import Message
from dsh.plugins.invariants import INVARIANTS
from dsh.profiles import CORE_ROWS, boot, load_profile
from dsh.session import SessionMeta
from dsh.testing import ScriptedModel, reply, tool_call

ROWS: list[dict[str, Any]] = [
    {"id": "invariants", "name": "invariants"},
    *CORE_ROWS,
    {"id": "builtin-tools", "name": "dsh.tools.builtin:BuiltinToolsPlugin"},
    {
        "id": "approval",
        "name": "dsh.plugins.approval:ApprovalPlugin",
        "config": {"auto_approve": True},
    },
]


async def test_read_edit_bash_answer(tmp_path: Path) -> None:
    (tmp_path / "greet.py").write_text('print("hello")\n')
    ctx = await boot(load_profile(base=ROWS))
    model = ScriptedModel()
    model.install(ctx)
    model.add(
        reply(tool_call("read", {"file_path": "greet.py"})),
        reply(
            tool_call(
                "edit",
                {"file_path": "greet.py", "old_string": "hello", "new_string": "hello, world"},
            )
        ),
        reply(tool_call("bash", {"command": "python3 greet.py", "description": "run it"})),
        reply("It prints hello, world."),
    )
    handle = await ctx.agents.create(
        CreateAgentOptions(
            session_id="e2e",
            meta=SessionMeta(cwd=str(tmp_path)),
            agent_options=AgentOptions(provider="scripted", model="scripted"),
        )
    )
    result = await run_prompt(handle.agent, "Make greet.py greet the world and run it.")
    assert result.finish_reason == "completed", result.error
    assert result.text == "It prints hello, world."
    assert (tmp_path / "greet.py").read_text() == 'print("hello, world")\n'

    outputs = [
        Message.from_json(e.data["message"]).content[0].content[0].text  # type: ignore[union-attr]
        for e in handle.agent.session.events
        if e.type == "tool/result"
    ]
    assert outputs == [
        f"<path>{tmp_path / 'greet.py'}</path>\n<type>file</type>\n<content>\n"
        'print("hello")\n\n(End of file - total 1 lines)\n</content>',
        f"The file {tmp_path / 'greet.py'} has been updated successfully.",
        "hello, world\n",
    ]
    # edit and bash were asks, approved by configuration: nobody was asked, nothing logged
    kinds = {e.type for e in handle.agent.session.events}
    assert not kinds & {"approval/asked", "approval/decided"}
    # The model was told about the tools and how to use them.
    first = model.requests[0]
    assert {t.name for t in first.tools} >= {"read", "edit", "bash", "glob", "grep"}
    assert "## bash" in json.dumps(first.system)
    await handle.dispose()
    violations = ctx.require(INVARIANTS).violations
    await ctx.owner.dispose()
    assert violations == []
