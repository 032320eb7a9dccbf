"""Approvals in `dsh chat`, as a person sees and answers them: the diff or the command in
full, answers that are never guessed, a reason the model reads, and "always for this
project" kept in the project's settings."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from .support import DSH, cli_env, workspace
from .terminal import Chats, Terminal, answer, at_prompt, exits_cleanly, tool_call

GREETING = 'def greet():\n    message = "hello wrold"\n    return message\n'


def fg_of(t: Terminal, starting: str) -> str:
    """The foreground colour of the first character of the screen line starting with `starting`."""
    for y, row in enumerate(t.display()):
        if row.startswith(starting):
            return str(t.screen.buffer[y][0].fg)
    raise AssertionError(f"no line starts with {starting!r}:\n{t.text()}")


def asking(t: Terminal) -> bool:
    """The question is at the prompt and what it asks about is printed above it."""
    return t.cursor_line().startswith("allow?") and "needs your approval" in t.text()


def test_an_edit_shows_a_coloured_diff_and_a_typo_asks_again(chat: Chats, tmp_path: Path) -> None:
    target = workspace(tmp_path) / "greeting.py"
    target.write_text(GREETING)
    edit = {"file_path": "greeting.py", "old_string": "wrold", "new_string": "world"}
    script = [
        answer(tool_call("read", file_path="greeting.py")),
        answer(tool_call("edit", **edit)),
        answer("Fixed the typo."),
    ]
    t, _ = chat(script)
    t.enter("fix the typo")
    t.wait_for(asking)
    lines = t.lines()
    assert "? edit needs your approval" in lines
    at = lines.index("--- a/greeting.py")
    assert lines[at + 1 : at + 6] == [
        "+++ b/greeting.py",
        "@@ -1,3 +1,3 @@",
        " def greet():",
        '-    message = "hello wrold"',
        '+    message = "hello world"',
    ]
    assert fg_of(t, "-    message") == "red" and fg_of(t, "+    message") == "green"
    t.enter("yess")
    t.wait_for("'yess': answer y, s, a, n or r").wait_for(asking)
    assert target.read_text() == GREETING  # nothing decided, nothing written
    t.enter("y")
    t.wait_for("Fixed the typo.").wait_for(at_prompt)
    assert "  ✓ allowed once" in t.lines()
    assert target.read_text() == GREETING.replace("wrold", "world")
    exits_cleanly(t)


def test_bash_shows_the_whole_command_and_where_it_runs(chat: Chats, tmp_path: Path) -> None:
    command = "python3 -c 'print(1 + 1)' \\\n  && echo a long command line that is never cut"
    run = tool_call("bash", command=command, description="Add")
    t, _ = chat([answer(run), answer("It printed 2.")])
    t.enter("add one and one")
    t.wait_for(asking)
    lines = t.lines()
    assert "$ python3 -c 'print(1 + 1)' \\" in lines
    assert "$   && echo a long command line that is never cut" in lines
    assert f"  in {workspace(tmp_path).resolve()}" in lines
    t.enter("s")
    t.wait_for("It printed 2.").wait_for(at_prompt)
    assert "  ✓ allowed for this session" in t.lines()
    exits_cleanly(t)


def test_no_with_a_reason_reaches_the_model(chat: Chats) -> None:
    clean = tool_call("bash", command="rm -rf build", description="Clean")
    script = [answer(clean), answer("Understood, I keep it.")]
    t, server = chat(script)
    t.enter("clean up")
    t.wait_for(asking)
    t.enter("r")
    t.wait_for(lambda t: t.cursor_line().startswith("why not?"))
    t.enter("the build folder is needed for the release")
    t.wait_for("Understood, I keep it.").wait_for(at_prompt)
    assert "  ✗ denied: the build folder is needed for the release" in t.lines()
    result = server.requests()[1]["body"]["messages"][-1]
    assert result["role"] == "tool"
    assert "the build folder is needed for the release" in result["content"]
    exits_cleanly(t)


def test_always_for_this_project_is_saved_shown_and_honoured(chat: Chats, tmp_path: Path) -> None:
    run = tool_call("bash", command="echo hello", description="Greet")
    server = chat.server([answer(run), answer("Said hello."), answer(run), answer("Again.")])
    t, _ = chat(server, cols=220)  # the saved-rule line is long
    t.enter("say hello")
    t.wait_for(asking)
    assert t.cursor_line().startswith(
        "allow? y once · s this session · a always in this project (trusts it)"
    )
    t.enter("a")
    t.wait_for("Said hello.").wait_for(at_prompt)
    local = workspace(tmp_path) / ".dsh" / "settings.local.json"
    assert f"  saved: allow Bash(echo hello) in {local}; this workspace is now trusted" in t.lines()
    assert json.loads(local.read_text()) == {"permissions": {"allow": ["Bash(echo hello)"]}}
    exits_cleanly(t)

    again, _ = chat(server)  # a new chat in the same project: not asked again
    again.enter("say it again")
    again.wait_for("Again.").wait_for(at_prompt)
    assert not any(line.startswith("? bash") for line in again.lines())
    exits_cleanly(again)

    shown = config_show(tmp_path)
    assert f"allow Bash(echo hello)  ({local}, trusted)" in shown


def config_show(tmp_path: Path) -> str:
    env: dict[str, Any] = cli_env(tmp_path)
    result = subprocess.run(
        [sys.executable, *DSH, "config", "show", "--cwd", str(workspace(tmp_path))],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout
