"""Rewind from the terminal: `/rewind` in `dsh chat` (seen through a terminal emulator), then
`dsh sessions rewind` and `dsh sessions diff` on the stored session."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from tests.plugins.rewind.scenario import PROMPTS, TMP_REFUSED, tree_hash, workspace

from .support import loopback_env
from .support import run_cli as dsh
from .support import workspace as empty_workspace
from .terminal import Chats, Terminal, answer, at_prompt, exits_cleanly, model_server, tool_call
from .test_sessions import SCRIPTED, in_turn, profile


def script() -> list[dict[str, Any]]:
    """The scenario's four turns on the wire; turn N ends saying "done N"."""

    def bash(command: str) -> dict[str, Any]:
        return answer(tool_call("bash", command=command, description="change the workspace"))

    edit = {"file_path": "a.txt", "old_string": "alpha", "new_string": "beta"}
    return [
        answer(tool_call("read", file_path="a.txt")),
        answer(tool_call("edit", **edit)),
        answer("done 1"),
        bash("printf 'bee\\n' > b.txt"),
        answer("done 2"),
        bash("rm gone.txt"),
        answer("done 3"),
        bash("printf '\\001\\377\\000' > logo.bin"),
        answer("done 4"),
    ]


def played(chat: Chats, tmp_path: Path) -> tuple[Terminal, Path, list[str], str]:
    """A chat that played the scenario: terminal, workspace, the tree before each prompt,
    and the session id."""
    ws = workspace(tmp_path)
    t, _ = chat(script(), "--yes", rows=40, cols=120)
    before = []
    for number, prompt in enumerate(PROMPTS, 1):
        before.append(tree_hash(ws))
        t.enter(prompt)
        t.wait_for(f"done {number}").wait_for(at_prompt)
    session = t.text().split("new session ")[1].split()[0]
    return t, ws, before, session


def test_rewind_in_chat_then_from_the_command_line(chat: Chats, tmp_path: Path) -> None:
    t, ws, before, session = played(chat, tmp_path)
    final = tree_hash(ws)

    t.enter("/rewind")
    t.wait_for("rewind to prompt (number; Enter cancels)").wait_for("D gone.txt")
    assert "edit a.txt" in t.text() and "M a.txt" in t.text()
    t.enter("1")
    t.wait_for("c: code, v: conversation, b: both")
    t.enter("c")
    t.wait_for("apply this rewind? y/n").wait_for("  +alpha")
    shown = t.text()
    assert "files: " in shown and "  -beta" in shown and "  +alpha" in shown  # the diff first
    assert tree_hash(ws) == final  # nothing happens before the yes
    t.enter("y")
    t.wait_for("(/rewind undo takes it back)").wait_for(at_prompt)
    assert tree_hash(ws) == before[0]
    t.enter("/rewind undo")
    t.wait_for("undid the last rewind (code)").wait_for(at_prompt)
    assert tree_hash(ws) == final
    exits_cleanly(t)

    listed = dsh(tmp_path, "sessions", "rewind", session)
    assert listed.returncode == 0, listed.stderr
    assert "change logo.bin" in listed.stdout and "M logo.bin" in listed.stdout

    dry = dsh(tmp_path, "sessions", "rewind", session, "--to", "2", "--code", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "dry run" in dry.stdout and "A gone.txt" in dry.stdout and "D b.txt" in dry.stdout
    assert tree_hash(ws) == final

    done = dsh(tmp_path, "sessions", "rewind", session, "--to", "2", "--code", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["mode"] == "code"
    assert tree_hash(ws) == before[1]
    undone = dsh(tmp_path, "sessions", "rewind", session, "--undo")
    assert undone.returncode == 0, undone.stderr
    assert undone.stdout.startswith(f"{session}: undid the last rewind (code)\n")
    assert tree_hash(ws) == final

    diff = dsh(tmp_path, "sessions", "diff", session, "--turn", "3")
    assert diff.returncode == 0, diff.stderr
    assert "turn 3 changed D gone.txt" in diff.stdout and "-to be deleted" in diff.stdout

    bad = dsh(tmp_path, "sessions", "rewind", session, "--to", "9")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1, bad.stderr
    assert "has no prompt 9" in bad.stderr and "Traceback" not in bad.stderr


def test_a_conversation_rewind_from_the_command_line(chat: Chats, tmp_path: Path) -> None:
    t, ws, _before, session = played(chat, tmp_path)
    exits_cleanly(t)
    final = tree_hash(ws)
    done = dsh(tmp_path, "sessions", "rewind", session, "--to", "3", "--conversation")
    assert done.returncode == 0, done.stderr
    assert "conversation: the next prompt continues from there" in done.stdout
    assert tree_hash(ws) == final
    with model_server(tmp_path, [answer("ok")]) as server:
        env = loopback_env(tmp_path, server.url)
        resumed = dsh(tmp_path, "sessions", "resume", session, "instead", env=env)
        assert resumed.returncode == 0, resumed.stderr
        sent = server.requests()[-1]["body"]["messages"]
    prompts = [
        m["content"] for m in sent if m["role"] == "user" and m["content"] in (*PROMPTS, "instead")
    ]
    assert prompts == [PROMPTS[0], PROMPTS[1], "instead"]
    shown = dsh(tmp_path, "sessions", "show", session).stdout  # the log keeps every turn…
    assert "⟲ conversation rewound to before prompt 3: the turns above since then" in shown


def test_chat_keeps_a_file_changed_outside_unless_asked(chat: Chats, tmp_path: Path) -> None:
    t, ws, before, _session = played(chat, tmp_path)
    (ws / "a.txt").write_bytes(b"mine\n")  # the person, between two prompts
    t.enter("/rewind 1 code")
    t.wait_for("also take back the files changed outside dsh? y/N")
    kept = "kept (changed outside dsh since then; the next question can take them back too)"
    t.wait_for(f"{kept}: a.txt")
    t.enter("")
    t.wait_for("apply this rewind? y/n")
    t.enter("y")
    t.wait_for("(/rewind undo takes it back)").wait_for(at_prompt)
    assert (ws / "a.txt").read_bytes() == b"mine\n"
    assert (ws / "gone.txt").exists() and not (ws / "b.txt").exists()
    t.enter("/rewind 1 code")
    t.wait_for("also take back the files changed outside dsh? y/N")  # (answered ones go)
    t.enter("y")
    t.wait_for("files: M a.txt").wait_for("apply this rewind? y/n")
    t.enter("y")
    t.wait_for(lambda t: t.text().count("(/rewind undo takes it back)") == 2)
    assert tree_hash(ws) == before[0]
    exits_cleanly(t)


def stored(tmp_path: Path, cwd: Path, prompt: str) -> tuple[str, Path]:
    """A session of one scripted turn in `cwd` (answered, nothing changed): its id and the
    scripted profile."""
    first = profile(tmp_path, "first", ["Noted."], "jsonl")
    created = dsh(tmp_path, "run", "--profile", str(first), *SCRIPTED, "--cwd", str(cwd), prompt)
    assert created.returncode == 0, created.stderr
    return created.stderr.split("session ")[-1].split(" ")[0], first


def one_line(done: subprocess.CompletedProcess[str], *parts: str) -> None:
    """A refusal: exit 2, one line on stderr holding each of `parts`, no traceback."""
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert all(part in done.stderr for part in parts), done.stderr


def test_a_workspace_without_checkpoints_says_why(tmp_path: Path) -> None:
    session, _ = stored(tmp_path, Path("/tmp"), "hi")
    why = f"session {session} has no checkpoints: {TMP_REFUSED}"
    listed = dsh(tmp_path, "sessions", "rewind", session)
    assert listed.returncode == 0 and listed.stdout == why + "\n", listed.stderr
    as_json = dsh(tmp_path, "sessions", "rewind", session, "--json")
    assert json.loads(as_json.stdout) == [] and why in as_json.stderr
    one_line(dsh(tmp_path, "sessions", "rewind", session, "--to", "1"), why)
    one_line(dsh(tmp_path, "sessions", "diff", session), why)


def test_listing_and_diffs_read_a_session_open_elsewhere(tmp_path: Path) -> None:
    session, _ = stored(tmp_path, empty_workspace(tmp_path), "note it")
    with in_turn(tmp_path, session, "jsonl") as holder:  # another process writes it
        listed = dsh(tmp_path, "sessions", "rewind", session)
        assert listed.returncode == 0, listed.stderr
        assert listed.stdout.startswith("  1  note it ")
        as_json = dsh(tmp_path, "sessions", "rewind", session, "--json")
        assert as_json.returncode == 0, as_json.stderr
        first = json.loads(as_json.stdout)[0]
        assert first == {"turn": 1, "text": "note it", "changes": [], "active": True}
        diff = dsh(tmp_path, "sessions", "diff", session, "--turn", "1")
        assert diff.returncode == 0, diff.stderr
        assert diff.stdout == "turn 1 changed no file in the workspace\n"
        rewound = dsh(tmp_path, "sessions", "rewind", session, "--to", "1")
        one_line(rewound, f"session {session!r} is being written by pid {holder.pid}")


def test_rewind_flags_without_to_are_usage_errors(tmp_path: Path) -> None:
    for flag in ("--code", "--conversation", "--both"):
        one_line(dsh(tmp_path, "sessions", "rewind", "x", flag), f"dsh: {flag} needs --to N")
    for flag in ("--dry-run", "--force"):
        one_line(dsh(tmp_path, "sessions", "rewind", "x", flag), f"{flag} needs --to N (or --undo)")
