"""Continuable subagents at the command line: a background helper's answer shows as a notice
line in `dsh chat` (through a pseudo-terminal), `send_message` continues it there, and
`dsh run` waits for it instead of tearing it down with the run.

A child's request and its parent's next one race to the model: the script gives both the
same reply ("OK.") wherever that can happen, so the screen is the same either way."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .support import cli_env, run_dsh, scripted_profile, workspace
from .terminal import Chats, Terminal, answer, at_prompt, exits_cleanly, tool_call

TASK = "Count the TODOs in src/."
START = {"description": "count todos", "prompt": TASK, "run_in_background": True}
NOTICE = "◆ subagent subagent-1 (count todos) finished [completed]"


def asking_approval(t: Terminal) -> bool:
    return t.cursor_line().startswith("allow?")


def child_requests(requests: list[dict[str, Any]]) -> list[list[str]]:
    """The user and assistant texts of each request the child made (its first prompt is
    the task)."""
    out = []
    for request in requests:
        texts = [
            m["content"]
            for m in request["body"]["messages"]
            if m["role"] in ("user", "assistant") and isinstance(m.get("content"), str)
        ]
        if texts and texts[0] == TASK:
            out.append(texts)
    return out


def test_a_helper_reports_and_is_continued_in_chat(chat: Chats) -> None:
    script = [
        answer(tool_call("subagent", **START)),
        answer("OK."),  # the parent's next step, or the child's answer
        answer("OK."),
        answer("The helper has counted."),  # the parent, told by the notice
        answer(tool_call("send_message", agent_id="subagent-1", message="Double check.")),
        answer("OK."),
        answer("OK."),
        answer("Checked twice."),
    ]
    t, server = chat(script)
    t.enter("count them in the background")
    t.wait_for("? subagent needs your approval").wait_for(asking_approval)
    t.enter("y")
    t.wait_for(NOTICE).wait_for("The helper has counted.").wait_for(at_prompt)
    t.enter("ask it to check again")
    t.wait_for("? send_message needs your approval").wait_for(asking_approval)
    t.enter("y")
    t.wait_for("Checked twice.").wait_for(at_prompt)
    assert t.text().count(NOTICE) == 2
    first, continued = child_requests(server.requests())
    assert first == [TASK]
    assert continued == [TASK, "OK.", "Double check."]  # it kept its context
    exits_cleanly(t)


async def test_dsh_run_waits_for_its_background_helper(tmp_path: Path) -> None:
    script = [
        {"tool": "subagent", "args": START},
        "OK.",
        "OK.",
        "The helper has counted.",
    ]
    profile = scripted_profile(tmp_path, script)
    code, out, err = await run_dsh(
        cli_env(tmp_path),
        *("run", "--profile", str(profile), "--provider", "scripted", "--model", "scripted"),
        *("--cwd", str(workspace(tmp_path)), "--yes", "count them in the background, please"),
    )
    assert code == 0, err
    assert NOTICE in err
    assert out.strip().endswith("The helper has counted.")
    session_id = err.split("session ")[-1].split(" ")[0]
    code, shown, err = await run_dsh(cli_env(tmp_path), "sessions", "show", "--json", session_id)
    assert code == 0, err
    _, *events = (json.loads(line) for line in shown.splitlines())
    ends = [e["data"]["reason"]["kind"] for e in events if e["type"] == "turn/end"]
    assert ends and set(ends) == {"completed"}
    code, listed, err = await run_dsh(cli_env(tmp_path), "sessions", "list", "--json")
    rows = [json.loads(line) for line in listed.splitlines()]
    # The helper's session is not listed; the task's title is its first five words.
    assert [(r["id"], r["title"]) for r in rows] == [(session_id, "count them in the background,")]
