"""Plan mode and the model's questions at the command line: `/plan` and `dsh run --plan`,
a question answered at the chat prompt (through a pseudo-terminal)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .support import cli_env, run_dsh, scripted_profile, workspace
from .terminal import Chats, Terminal, answer, at_prompt, exits_cleanly, tool_call

PLAN = "1. Write notes.txt saying hi.\n2. Check it."


def asking_to_answer(t: Terminal) -> bool:
    return t.cursor_line().startswith("answer »")


def asking_approval(t: Terminal) -> bool:
    return t.cursor_line().startswith("allow?")


def tool_results(request: dict[str, Any]) -> list[str]:
    return [m["content"] for m in request["body"]["messages"] if m["role"] == "tool"]


def test_a_question_is_answered_at_the_prompt(chat: Chats) -> None:
    questions = [
        {
            "question": "Which port?",
            "header": "Port",
            "options": [{"label": "80"}, {"label": "8080", "description": "the dev port"}],
        },
        {"question": "Any name?"},
    ]
    script = [
        answer(tool_call("ask_user_question", questions=questions)),
        answer("Using 8080 for demo."),
    ]
    t, server = chat(script)
    t.enter("set up the server")
    t.wait_for("type a number, or your own answer").wait_for(asking_to_answer)
    lines = t.lines()
    at = lines.index("? (1/2) Which port?  [Port]")
    assert lines[at + 1 : at + 4] == [
        "  1. 80",
        "  2. 8080 — the dev port",
        "  type a number, or your own answer",
    ]
    t.enter("7")
    t.wait_for("'7': type choice numbers")
    t.enter("2")
    t.wait_for("? (2/2) Any name?").wait_for(asking_to_answer)
    t.enter("demo")
    t.wait_for("Using 8080 for demo.").wait_for(at_prompt)
    assert tool_results(server.requests()[1]) == [
        'The user answered:\n- Which port? → 8080\n- Any name? → "demo"'
    ]
    exits_cleanly(t)


def test_plan_mode_in_chat_refuses_an_edit_until_the_plan_is_approved(
    chat: Chats, tmp_path: Path
) -> None:
    notes = workspace(tmp_path) / "notes.txt"
    write = {"file_path": "notes.txt", "content": "hi\n"}
    script = [
        answer(tool_call("write", **write)),
        answer(tool_call("exit_plan_mode", plan=PLAN)),
        answer(tool_call("write", **write)),
        answer("Wrote notes.txt."),
    ]
    t, server = chat(script)
    t.enter("/plan")
    t.wait_for("◇ plan mode on").wait_for(lambda t: t.cursor_line().startswith("plan >"))
    t.enter("write the notes")
    t.wait_for("? the agent's plan: approve it to leave plan mode").wait_for(asking_approval)
    lines = t.lines()
    assert "  1. Write notes.txt saying hi." in lines and "  2. Check it." in lines
    assert not notes.exists()  # the first write was refused
    refused = tool_results(server.requests()[1])[0]
    assert refused.startswith('Error: plan mode: "write" is not a reading or searching tool')
    t.enter("y")
    t.wait_for("◇ plan mode off").wait_for("? write needs your approval").wait_for(asking_approval)
    t.enter("y")
    t.wait_for("Wrote notes.txt.").wait_for(at_prompt)
    assert notes.read_text() == "hi\n"
    exits_cleanly(t)


async def test_dsh_run_plan_plans_first_and_yes_approves(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    write = {"file_path": "notes.txt", "content": "hi\n"}
    script = [
        {"tool": "write", "args": write},
        {"tool": "exit_plan_mode", "args": {"plan": PLAN}},
        {"tool": "write", "args": write},
        "Done.",
    ]
    profile = scripted_profile(tmp_path, script)
    code, out, err = await run_dsh(
        cli_env(tmp_path),
        *("run", "--profile", str(profile), "--provider", "scripted", "--model", "scripted"),
        *("--cwd", str(ws), "--plan", "--yes", "--json", "write the notes"),
    )
    assert code == 0, err
    events = [json.loads(line) for line in out.splitlines()]
    modes = [e["data"]["active"] for e in events if e["type"] == "plan/mode"]
    assert modes == [True, False]
    results = [e for e in events if e["type"] == "tool/result"]
    texts = [r["data"]["message"]["content"][0]["content"][0]["text"] for r in results]
    assert texts[0].startswith('Error: plan mode: "write"')
    assert texts[1].startswith("The plan is approved.")  # by --yes: no "the user" claimed
    assert (ws / "notes.txt").read_text() == "hi\n"


async def test_dsh_run_plan_without_yes_answers_with_the_plan(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    write = {"file_path": "notes.txt", "content": "hi\n"}
    script = [
        {"tool": "write", "args": write},
        {"tool": "exit_plan_mode", "args": {"plan": PLAN}},
        PLAN,
    ]
    profile = scripted_profile(tmp_path, script)
    code, out, err = await run_dsh(
        cli_env(tmp_path),
        *("run", "--profile", str(profile), "--provider", "scripted", "--model", "scripted"),
        *("--cwd", str(ws), "--plan", "write the notes"),
    )
    assert code == 0, err
    assert out.strip() == PLAN  # nobody approved it: the plan is the answer
    assert "    1. Write notes.txt saying hi.\n    2. Check it." in err  # whole, under its call
    assert "◇ plan mode on" in err and "plan mode off" not in err
    assert not (ws / "notes.txt").exists()
