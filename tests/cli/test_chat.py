"""`dsh chat` driven through a pseudo-terminal, as a person would."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pexpect

from .support import DSH, cli_env, scripted_profile, workspace


def spawn(tmp_path: Path, script: list[Any]) -> pexpect.spawn:
    profile = scripted_profile(tmp_path, script)
    env = cli_env(tmp_path, TERM="xterm")
    args = [*DSH, "chat", "--profile", str(profile), "--provider", "scripted"]
    args += ["--model", "scripted", "--cwd", str(workspace(tmp_path))]
    child = pexpect.spawn(
        sys.executable,
        args,
        env=env,
        cwd=str(tmp_path),
        timeout=30,
        encoding="utf-8",
        dimensions=(40, 200),
    )
    child.expect("new session session-")
    child.expect(">")
    return child


def test_followup_steer_cancel_and_exit(tmp_path: Path) -> None:
    script = [
        "First answer.",
        {"text": "slow answer " * 20, "delay": 0.05},
        "Answer to the steering.",
        {"text": "never ending", "hang": True},
        "After cancel.",
    ]
    child = spawn(tmp_path, script)
    child.sendline("hello")
    child.expect("First answer.")
    child.expect(">")

    child.sendline("go slowly")
    child.expect("slow answer")
    child.sendline("also consider this")  # steering while the turn runs
    child.expect("Answer to the steering.")

    child.sendline("never stop")
    child.expect("never ending")
    child.sendcontrol("c")
    child.expect("cancelling the turn")
    child.expect(r"cancelled \(user\)")

    child.sendline("and now?")
    child.expect("After cancel.")
    child.sendline("/exit")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


def test_commands_and_double_ctrl_c(tmp_path: Path) -> None:
    child = spawn(tmp_path, [])
    child.sendline("/help")
    child.expect("/resume ID")
    child.sendline("/nonsense")
    child.expect("unknown command /nonsense")
    child.sendline("/new")
    child.expect("new session session-")
    child.sendcontrol("c")
    child.expect("Ctrl-C again to exit")
    child.sendcontrol("c")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


def test_resume_a_previous_session(tmp_path: Path) -> None:
    child = spawn(tmp_path, ["Remembered."])
    child.expect(">")
    child.sendline("remember this")
    child.expect("Remembered.")
    child.sendline("/sessions")
    child.expect(r"(session-[0-9a-f-]{36})")
    session_id = child.match.group(1)
    child.sendline("/exit")
    child.expect(pexpect.EOF)

    again = spawn(tmp_path, ["Welcome back."])
    again.sendline(f"/resume {session_id}")
    again.expect(f"resumed session {session_id}")
    again.sendline("are you there?")
    again.expect("Welcome back.")
    again.sendline("/exit")
    again.expect(pexpect.EOF)
    again.close()
    assert again.exitstatus == 0


def test_an_ask_is_answered_at_the_prompt(tmp_path: Path) -> None:
    script = [
        {"tool": "shout", "args": {"text": "once"}},
        "Shouted once.",
        {"tool": "shout", "args": {"text": "never"}},
        "Not allowed, fine.",
    ]
    child = spawn(tmp_path, script)
    child.sendline("shout once")
    child.expect("needs approval")
    child.sendline("y")
    child.expect("ONCE")  # the tool ran
    child.expect("Shouted once.")
    child.sendline("shout again")
    child.expect("needs approval")
    child.sendline("n")
    child.expect("rejected")
    child.expect("Not allowed, fine.")
    child.sendline("/exit")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


def test_compact_command(tmp_path: Path) -> None:
    child = spawn(tmp_path, ["A long first answer " * 20, "Summary: the user said hello."])
    child.sendline("hello " * 40)
    child.expect("A long first answer")
    child.expect(">")
    child.sendline("/compact")
    child.expect("compacted")
    child.sendline("/exit")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
