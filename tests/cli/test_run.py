"""`dsh run` through a real subprocess, with a scripted model mounted by a profile."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from .support import DSH, cli_env, scripted_profile, workspace
from .terminal import ModelServer


def dsh(
    tmp_path: Path, script: list[Any], *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    profile = scripted_profile(tmp_path, script)
    command = [*DSH, "run", "--profile", str(profile), "--provider", "scripted"]
    command += ["--model", "scripted", "--cwd", str(workspace(tmp_path)), *args]
    return subprocess.run(
        [sys.executable, *command],
        capture_output=True,
        text=True,
        timeout=120,
        env=cli_env(tmp_path, **(env or {})),
        cwd=tmp_path,
    )


def test_happy_path_streams_text_and_exits_zero(tmp_path: Path) -> None:
    result = dsh(
        tmp_path,
        [{"tool": "shout", "args": {"text": "hey"}}, "Shouted: HEY."],
        "--yes",
        "shout hey",
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "Shouted: HEY."
    assert 'shout(text="hey")' in result.stderr
    assert "HEY" in result.stderr  # the one-line tool result
    assert "session session-" in result.stderr and "completed" in result.stderr


def test_the_transcript_shows_emoji_codes_verbatim(tmp_path: Path) -> None:
    result = dsh(
        tmp_path, [{"tool": "shout", "args": {"text": ":smile:"}}, "Done."], "--yes", "shout"
    )
    assert result.returncode == 0, result.stderr
    assert 'shout(text=":smile:")' in result.stderr and ":SMILE:" in result.stderr
    assert "\N{SMILING FACE WITH OPEN MOUTH AND SMILING EYES}" not in result.stderr


def test_results_of_calls_run_together_name_their_call(tmp_path: Path) -> None:
    for name, text in (("a.txt", "one\n"), ("b.txt", "one\ntwo\n")):
        (workspace(tmp_path) / name).write_text(text)
    calls = [{"tool": "read", "args": {"file_path": name}} for name in ("a.txt", "b.txt")]
    result = dsh(tmp_path, [{"tools": calls}, "Both."], "--yes", "read both")
    assert result.returncode == 0, result.stderr
    lines = result.stderr.splitlines()
    first = lines.index('● read(file_path="a.txt")')
    assert lines[first + 1] == '● read(file_path="b.txt")'  # both run at once
    results = sorted(line for line in lines if line.startswith("  ⎿ "))
    assert results == [
        '  ⎿ read(file_path="a.txt"): read 1 line',
        '  ⎿ read(file_path="b.txt"): read 2 lines',
    ]


def test_a_result_right_under_its_call_needs_no_name(tmp_path: Path) -> None:
    result = dsh(tmp_path, [{"tool": "shout", "args": {"text": "hey"}}, "Done."], "--yes", "x")
    assert "  ⎿ HEY" in result.stderr.splitlines()


def test_without_yes_an_ask_tool_is_denied_and_the_exit_says_so(tmp_path: Path) -> None:
    calls = [{"tool": "shout", "args": {"text": "hey"}}, {"tool": "shout", "args": {"text": "yo"}}]
    result = dsh(tmp_path, [*calls, "Denied."], "shout hey")
    assert result.returncode == 3, result.stderr  # completed, but what it needed was refused
    assert "nobody can give it in this run" in result.stderr  # what the model was told
    assert "dsh: warning" not in result.stderr  # the last line says it, once
    assert result.stderr.rstrip().splitlines()[-1] == (
        "denied (they need approval): shout (2 calls) — to allow: pass --yes, add "
        "`{tool: shout, action: allow}` to the `policy` of the approval row of a profile "
        "(dsh.yml), or use dsh chat"
    )


def test_failing_tool_is_shown_and_the_turn_still_completes(tmp_path: Path) -> None:
    result = dsh(tmp_path, [{"tool": "shout", "args": {}}, "Sorry."], "--yes", "shout nothing")
    assert result.returncode == 0, result.stderr
    assert "Error: invalid arguments" in result.stderr


def test_model_error_exits_non_zero_with_the_reason(tmp_path: Path) -> None:
    result = dsh(tmp_path, [{"fail": "INVALID_CREDENTIAL", "message": "bad key"}], "hello")
    assert result.returncode == 1
    assert "error: INVALID_CREDENTIAL: bad key" in result.stderr


def test_json_prints_one_event_per_line(tmp_path: Path) -> None:
    result = dsh(tmp_path, ["Plain answer."], "--json", "hi")
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    types = [e["type"] for e in events]
    assert types[0] == "agent/inbox/spliced" and types[-1] == "turn/end"
    # Contiguous from the prompt on (the agent's creation logged `sandbox/mode` before it).
    first = events[0]["seq"]
    assert [e["seq"] for e in events] == list(range(first, first + len(events)))


def test_missing_deepseek_key_is_a_clear_message(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "DEEPSEEK_API_KEY"}
    result = subprocess.run(
        [sys.executable, "-c", "from dsh.cli import main; main()", "run", "hello"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**env, "HOME": str(tmp_path)},
        cwd=tmp_path,
    )
    assert result.returncode == 2
    assert "DEEPSEEK_API_KEY" in result.stderr


def test_a_usage_line_with_its_cost_follows_each_turn(tmp_path: Path) -> None:
    prices = tmp_path / "prices.yml"
    row = {"id": "usage", "config": {"prices": [{"route": "scripted/*", "input": 1.0,
                                                 "output": 2.0, "cache_read": 0.5}]}}  # fmt: skip
    prices.write_text(yaml.safe_dump([row]))
    script = [{"tool": "shout", "args": {"text": "a"}, "usage": [600, 150, 9000]},
              {"text": "Done.", "usage": [400, 50, 0]}]  # fmt: skip
    result = dsh(tmp_path, script, "--profile", str(prices), "--yes", "shout a")
    assert result.returncode == 0, result.stderr
    # 10,000 in, 9,000 of them cached: 1,000 x $1 + 9,000 x $0.5 + 200 out x $2 per million.
    assert "↑ 10.0k in (90% cached) · ↓ 200 out · $0.0059" in result.stderr
    # The next turn of the session: its own cost, and the session's so far beside it.
    again = [{"text": "Again.", "usage": [1000, 0, 0]}]
    second = dsh(tmp_path, again, "--profile", str(prices), "-c", "again")
    assert second.returncode == 0, second.stderr
    assert "↑ 1.0k in · ↓ 0 out · $0.0010 (session $0.0069)\n" in second.stderr
    assert "switched" not in second.stderr and "already" not in second.stderr
    unpriced = dsh(tmp_path, [{"text": "Hi.", "usage": [10, 2, 0]}], "hi")
    assert "↑ 10 in · ↓ 2 out\n" in unpriced.stderr  # no price for the route: no cost


def test_sessions_show_and_stats_total_the_usage(tmp_path: Path) -> None:
    for word in ("one", "two"):
        run = dsh(tmp_path, [{"text": f"Noted {word}.", "usage": [1200, 30, 800]}], word)
        assert run.returncode == 0, run.stderr
    session_id = run.stderr.split("session ")[-1].split(" ")[0]
    env = cli_env(tmp_path)
    cli = [sys.executable, *DSH, "sessions"]
    shown = subprocess.run(
        [*cli, "show", session_id], capture_output=True, text=True, env=env, timeout=60
    )
    assert "usage: 1 turn · 1 model request · 0 tool calls · " in shown.stdout
    assert "↑ 2.0k in (40% cached) · ↓ 30 out" in shown.stdout
    stats = subprocess.run(
        [*cli, "stats", "--json"], capture_output=True, text=True, env=env, timeout=60
    )
    (row,) = [json.loads(line) for line in stats.stdout.splitlines()]
    assert row["provider"] == "scripted" and row["model"] == "scripted"
    assert (row["requests"], row["inputTokens"], row["cacheReadTokens"]) == (2, 2400, 1600)
    assert row["outputTokens"] == 60 and row["costUsd"] is None  # no price for this route
    text = subprocess.run([*cli, "stats"], capture_output=True, text=True, env=env, timeout=60)
    assert f"{row['day']}  scripted/scripted" in text.stdout
    assert text.stdout.splitlines()[-1].startswith("total")


def test_sessions_list_show_and_resume(tmp_path: Path) -> None:
    first = dsh(tmp_path, ["Noted: the code word is tulip."], "remember tulip")
    assert first.returncode == 0, first.stderr
    session_id = first.stderr.split("session ")[-1].split(" ")[0]
    env = cli_env(tmp_path)
    cli = [sys.executable, *DSH, "sessions"]
    listed = subprocess.run([*cli, "list"], capture_output=True, text=True, env=env, timeout=60)
    assert session_id in listed.stdout
    shown = subprocess.run(
        [*cli, "show", session_id], capture_output=True, text=True, env=env, timeout=60
    )
    assert "> remember tulip" in shown.stdout
    assert "Noted: the code word is tulip." in shown.stdout
    raw = subprocess.run(
        [*cli, "show", "--json", session_id], capture_output=True, text=True, env=env, timeout=60
    )
    lines = [json.loads(line) for line in raw.stdout.splitlines()]
    assert lines[0]["type"] == "session" and lines[0]["id"] == session_id
    assert lines[-1]["type"] == "turn/end"
    missing = subprocess.run(
        [*cli, "show", "session-nope"], capture_output=True, text=True, env=env, timeout=60
    )
    assert missing.returncode == 2 and "no stored session" in missing.stderr

    profile = scripted_profile(tmp_path, ["The word was tulip."])
    resumed = subprocess.run(
        [
            *cli,
            "resume",
            session_id,
            "what was the word?",
            "--profile",
            str(profile),
            "--provider",
            "scripted",
            "--model",
            "scripted",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.strip() == "The word was tulip."
    after = subprocess.run(
        [*cli, "show", "--json", session_id], capture_output=True, text=True, env=env, timeout=60
    )
    turns = [
        json.loads(line)["data"]["turn"]
        for line in after.stdout.splitlines()
        if json.loads(line)["type"] == "turn/start"
    ]
    assert turns == [1, 2]


def test_on_a_terminal_the_answer_is_rendered_markdown_and_no_spinner_stays(
    tmp_path: Path,
) -> None:
    from .terminal import Terminal, answer, model_server

    text = "# Result\n\nThe list:\n\n1. **one**\n2. `two`\n\n```sh\necho three\n```\n"
    with model_server(tmp_path, [answer(text)]) as server:
        env = cli_env(tmp_path, DEEPSEEK_BASE_URL=server.url, DEEPSEEK_API_KEY="sk-test")
        env["TERM"] = "xterm-256color"
        argv = [sys.executable, *DSH, "run", "--cwd", str(workspace(tmp_path)), "list"]
        terminal = Terminal(argv, env=env, cwd=tmp_path, rows=30, cols=80)
        try:
            assert terminal.wait_exit() == 0
            lines = [line for line in terminal.lines() if line.strip()]
        finally:
            terminal.close()
    start = next(i for i, line in enumerate(lines) if "Result" in line)
    assert [line.strip() for line in lines[start : start + 5]] == [
        "Result",
        "The list:",
        "1 one",
        "2 two",
        "echo three",
    ]
    assert lines[-1].startswith("session session-") and lines[-1].endswith("· completed")
    assert not any("thinking…" in line or "writing…" in line for line in lines)

    plain = dsh(tmp_path, [text], "--plain", "x")  # piped: the raw text, whatever the flag
    assert plain.stdout == text.rstrip("\n") + "\n"


def test_on_a_terminal_tool_calls_and_results_read_in_order(tmp_path: Path) -> None:
    from .terminal import Terminal, answer, model_server, tool_call

    ws = workspace(tmp_path)
    (ws / "notes.txt").write_text("one\ntwo\n")
    script = [
        answer(tool_call("read", file_path="notes.txt")),
        answer(tool_call("read", file_path="missing.txt")),
        answer("Read them."),
    ]
    with model_server(tmp_path, script) as server:
        env = cli_env(tmp_path, DEEPSEEK_BASE_URL=server.url, DEEPSEEK_API_KEY="sk-test")
        env["TERM"] = "xterm-256color"
        argv = [sys.executable, *DSH, "run", "--yes", "--cwd", str(ws), "read"]
        terminal = Terminal(argv, env=env, cwd=tmp_path, rows=30, cols=80)
        try:
            assert terminal.wait_exit() == 0
            lines = [line.rstrip() for line in terminal.lines() if line.strip()]
        finally:
            terminal.close()
    first = next(i for i, line in enumerate(lines) if line.startswith("●"))
    assert lines[first : first + 3] == [
        '● read(file_path="notes.txt")',
        "  ⎿ read 2 lines",
        '● read(file_path="missing.txt")',
    ]
    assert lines[first + 3].startswith("  ⎿ Error: ")
    assert "Read them." in lines[first + 4 :]
    assert not any("thinking…" in line or "running" in line for line in lines)


def test_a_retry_line_says_what_failed(tmp_path: Path) -> None:
    waited = "deepseek-official: no data for 60s while waiting for the response to start"
    result = dsh(tmp_path, [{"fail": "TIMEOUT", "message": waited}, "Recovered."], "hello")
    assert result.returncode == 0, result.stderr
    shown = " ".join(result.stderr.split())  # the console wraps long lines
    assert "↻ retry 1/5 in " in shown
    assert f"s: {waited.removeprefix('deepseek-official: ')}" in shown
    assert result.stdout.strip() == "Recovered."


def test_a_write_result_says_what_it_did_to_which_file(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    script = [
        {
            "parts": [
                {
                    "tool_call": {
                        "name": "write",
                        "arguments": {"file_path": "new.txt", "content": "hello\n"},
                    }
                }
            ]
        },
        "Written.",
    ]
    server = ModelServer(tmp_path, script)
    try:
        env = cli_env(tmp_path, DEEPSEEK_BASE_URL=server.url, DEEPSEEK_API_KEY="sk-test")
        result = subprocess.run(
            [sys.executable, *DSH, "run", "--yes", "--cwd", str(ws), "write it"],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
    finally:
        server.close()
    assert result.returncode == 0, result.stderr
    assert f"⎿ created {ws / 'new.txt'}" in result.stderr
    assert "<type>file</type>" not in result.stderr
