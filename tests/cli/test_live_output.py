"""A running command's output, live in the terminal: its last lines under the call while it
runs, folded into the result line when it ends (`dsh chat` and `dsh run`)."""

from __future__ import annotations

import contextlib
import os
import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .support import DSH, cli_env, scripted_profile, workspace
from .terminal import Chats, Terminal, answer, at_prompt, exits_cleanly, model_server, tool_call

RUNNING = re.compile(r"running bash… · \d+ s")
STEPPED = re.compile(r"running steps… step 3 of 3 \(100%\) · \d+ s")


def gated_command(tmp_path: Path) -> tuple[str, Path]:
    """A command printing two lines, then waiting on a fifo until the test writes to it."""
    gate = workspace(tmp_path) / "gate"
    os.mkfifo(gate)
    return f"for i in 1 2; do echo line$i; done; cat {gate} >/dev/null; echo line3", gate


def tail_shows(*lines: str) -> Callable[[Terminal], bool]:
    def check(t: Terminal) -> bool:
        display = t.display()
        return all(f"  │ {line}" in display for line in lines)

    return check


def running(t: Terminal) -> bool:
    return any(RUNNING.search(line) for line in t.display())


def test_chat_shows_a_commands_output_while_it_runs(chat: Chats, tmp_path: Path) -> None:
    command, gate = gated_command(tmp_path)
    run = tool_call("bash", command=command, description="count")
    t, _ = chat([answer(run), answer("Counted.")], "--yes")
    t.enter("count")
    # The call has not ended (it waits on the gate): its tail, and for how long it has run
    # (the status line is drawn on its own tick).
    t.wait_for(lambda t: tail_shows("line1", "line2")(t) and running(t))
    gate.write_text("go\n")
    t.wait_for("Counted.").wait_for(at_prompt)
    assert not any("│ line" in line for line in t.lines())  # folded into the result
    assert any(line.startswith("  ⎿ ") for line in t.lines())
    exits_cleanly(t)


@contextmanager
def dsh_run(tmp_path: Path, script: list[Any], *args: str) -> Iterator[Terminal]:
    """`dsh run --yes ARGS go` in a terminal, against the model server playing `script`
    (the script is a profile's when `args` name one)."""
    with contextlib.ExitStack() as stack:
        env = cli_env(tmp_path)
        if "--profile" not in args:
            server = stack.enter_context(model_server(tmp_path, script))
            env.update(DEEPSEEK_BASE_URL=server.url, DEEPSEEK_API_KEY="sk-test")
        env["TERM"] = "xterm-256color"
        cwd = ("--cwd", str(workspace(tmp_path)))
        argv = [sys.executable, *DSH, "run", "--yes", *cwd, *args, "go"]
        terminal = Terminal(argv, env=env, cwd=tmp_path, rows=30, cols=100)
        stack.callback(terminal.close)
        yield terminal


def shown(terminal: Terminal) -> list[str]:
    """What stays on the screen once it exited (0), the blank lines left out."""
    assert terminal.wait_exit() == 0
    return [line.rstrip() for line in terminal.lines() if line.strip()]


def test_run_on_a_terminal_shows_the_tail_and_folds_it(tmp_path: Path) -> None:
    command, gate = gated_command(tmp_path)
    script = [answer(tool_call("bash", command=command, description="count")), answer("Counted.")]
    with dsh_run(tmp_path, script) as terminal:
        terminal.wait_for(lambda t: tail_shows("line1", "line2")(t) and running(t))
        first = spinner_frame(terminal)
        terminal.wait_for(lambda t: spinner_frame(t) not in (first, None))  # it turns
        gate.write_text("go\n")
        lines = shown(terminal)
    assert "Counted." in lines
    assert not any("│ line" in line or "running bash" in line for line in lines)


def spinner_frame(terminal: Terminal) -> str | None:
    """The spinner's frame on the status line (None: no status line)."""
    for line in terminal.display():
        found = re.search(r"([⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏]) running bash", line)
        if found:
            return found.group(1)
    return None


def test_run_shows_a_plugin_tools_progress_in_its_status(tmp_path: Path) -> None:
    gate = workspace(tmp_path) / "gate"
    os.mkfifo(gate)
    script = [{"tool": "steps", "args": {"count": 3, "gate": str(gate)}}, "Three steps."]
    profile = ("--profile", str(scripted_profile(tmp_path, script)))
    with dsh_run(tmp_path, script, *profile, "--provider", "scripted", "-m", "scripted") as t:
        t.wait_for(lambda t: any(STEPPED.search(line) for line in t.display()))
        gate.write_text("go\n")
        lines = shown(t)
    assert "Three steps." in lines and not any("step 3 of 3" in line for line in lines)


def test_run_on_a_terminal_is_not_flooded_by_a_chatty_command(tmp_path: Path) -> None:
    command = "head -c 50000000 /dev/zero | tr '\\0' 'x' | fold -w 100"
    script = [answer(tool_call("bash", command=command, description="flood")), answer("Done.")]
    with dsh_run(tmp_path, script) as terminal:
        lines = shown(terminal)
    assert "Done." in lines and len(lines) < 40  # the tail lived in place, then folded
    assert not any("│ xxx" in line for line in lines)
