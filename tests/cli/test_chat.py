"""`dsh chat` as a person sees it: a pseudo-terminal read through a terminal emulator,
against the loopback model server streaming token by token."""

from __future__ import annotations

import asyncio
import itertools
import re
import signal
from pathlib import Path

import pytest

from dsh.plugins.sandbox import probe

from .support import workspace
from .terminal import USAGE, Chats, answer, at_prompt, exits_cleanly, tool_call


def test_a_one_line_answer_stays_after_the_turn(chat: Chats) -> None:
    t, _ = chat([answer("Hello there!", usage=USAGE), answer("Still here.")])
    t.enter("hello")
    t.wait_for("↑ 3.6k in (75% cached) · ↓ 40 out").wait_for(at_prompt)
    lines = t.lines()
    asked = lines.index("> hello")
    assert lines[asked + 1] == "Hello there!"
    t.enter("and now?")
    t.wait_for("Still here.").wait_for(at_prompt)
    assert t.lines().count("Hello there!") == 1  # kept, and printed once
    exits_cleanly(t)


MARKDOWN = (
    "Hello! Here is a list:\n\n- first item\n- second item\n\n"
    "```python\nprint('hi')\n```\n\nThat is **all**."
)


def test_a_multi_line_answer_is_whole_in_order_and_rendered(chat: Chats) -> None:
    t, _ = chat([answer(MARKDOWN)])
    t.enter("a list please")
    t.wait_for("That is all.").wait_for(at_prompt)
    lines = t.lines()
    start = lines.index("Hello! Here is a list:")
    shown = [line for line in lines[start:] if line.strip()]
    assert shown[:5] == [
        "Hello! Here is a list:",
        " • first item",
        " • second item",
        " print('hi')",
        "That is all.",
    ]
    # Markdown: the list bullets and bold are rendered, the fence and stars are gone.
    assert "```" not in t.text() and "**" not in t.text()
    exits_cleanly(t)


def test_reasoning_is_dimmed_and_folded_and_can_be_shown_in_full(chat: Chats) -> None:
    thought = {"reasoning": "The user greets me.\nI should greet back."}
    t, _ = chat([answer(thought, "Hi!"), answer(thought, "Hi again!")])
    t.enter("hello")
    t.wait_for("Hi!").wait_for(at_prompt)
    assert "∴ The user greets me. I should greet back. (2 lines of thinking)" in t.lines()
    t.enter("/reasoning")
    t.wait_for("reasoning is now shown in full")
    t.enter("hello again")
    t.wait_for("Hi again!").wait_for(at_prompt)
    lines = t.lines()
    at = lines.index("I should greet back.")
    assert lines[at - 1] == "The user greets me."
    row = next(
        r
        for r in t.screen.buffer.values()
        if "".join(c.data for c in r.values()).startswith("The user")
    )
    assert row[0].italics  # dimmed: italic grey
    exits_cleanly(t)


def test_a_tool_call_and_its_result_come_in_order(chat: Chats, tmp_path: Path) -> None:
    (workspace(tmp_path) / "notes.txt").write_text("alpha\n  indented beta\n")
    read = {"tool_call": {"name": "glob", "arguments": {"pattern": "*.txt"}}}
    t, _ = chat([answer("Let me look.", read), answer("There is notes.txt.")])
    t.enter("what is here?")
    t.wait_for("There is notes.txt.").wait_for(at_prompt)
    lines = t.lines()
    order = [
        lines.index("Let me look."),
        lines.index('● glob(pattern="*.txt")'),
        next(i for i, line in enumerate(lines) if line.startswith("  ⎿ ") and "notes.txt" in line),
        lines.index("There is notes.txt."),
    ]
    assert order == sorted(order)
    exits_cleanly(t)


def test_a_budget_stops_the_turn_with_one_line_and_the_chat_goes_on(chat: Chats) -> None:
    look = {"tool_call": {"name": "glob", "arguments": {"pattern": "*"}}}
    script = [answer("Looking.", look), answer("Again.", look), answer("Here it is.")]
    t, _ = chat(script, "--max-steps", "1")
    t.enter("look around")
    t.wait_for("✗ budget reached: max-steps 1 per run").wait_for(at_prompt)
    t.enter("go on")  # a new run: its own budget
    stopped = "✗ budget reached: max-steps 1 per run"
    t.wait_for("Again.").wait_for(lambda t: t.text().count(stopped) == 2).wait_for(at_prompt)
    exits_cleanly(t)


def test_steering_mid_turn_is_queued_then_taken(chat: Chats) -> None:
    slow = {
        "parts": ["I am counting: " + " ".join(str(i) for i in range(120))],
        "delay": 0.02,
        "piece_chars": 2,
    }
    t, server = chat([slow, answer("Counting stopped, as you asked.")])
    t.enter("count slowly")
    t.wait_for("I am counting")  # streaming into the live area
    t.enter("stop counting")
    t.wait_for("⧗ queued: stop counting")
    t.wait_for("Counting stopped, as you asked.").wait_for(at_prompt)
    lines = t.lines()
    assert lines.index("> stop counting") < lines.index("Counting stopped, as you asked.")
    assert not any("queued" in line for line in t.display())
    messages = server.requests()[1]["body"]["messages"]
    assert messages[-1] == {"role": "user", "content": "stop counting"}
    exits_cleanly(t)


def test_ctrl_c_cancels_the_turn_and_keeps_what_was_shown(chat: Chats) -> None:
    t, _ = chat([answer("Thinking out loud, and then", hang=True), answer("Back again.")])
    t.enter("never stop")
    t.wait_for("Thinking out loud, and then")  # all of it streamed; the model then stalls
    t.ctrl("c")
    t.wait_for("✗ cancelled (user)").wait_for(at_prompt)
    lines = t.lines()
    assert lines.index("Thinking out loud, and then") < lines.index("✗ cancelled (user)")
    t.enter("and now?")
    t.wait_for("Back again.")
    exits_cleanly(t)


def test_ctrl_c_twice_at_an_idle_prompt_exits(chat: Chats) -> None:
    t, _ = chat([])
    t.ctrl("c")
    t.wait_for("(Ctrl-C again to exit)").wait_for(at_prompt)
    t.ctrl("c")
    assert t.wait_exit() == 0


def test_ctrl_c_as_sigint_at_the_prompt_counts_too(chat: Chats) -> None:
    # A Ctrl-C typed while the prompt prints a note (the terminal is cooked then) is SIGINT.
    t, _ = chat([])
    t.ctrl("c")
    t.wait_for("(Ctrl-C again to exit)").wait_for(at_prompt)
    t.child.kill(signal.SIGINT)
    assert t.wait_exit() == 0


def test_ctrl_c_cancels_a_compaction(chat: Chats) -> None:
    # While /compact waits for the model no prompt reads the keys: Ctrl-C arrives as SIGINT,
    # after prompts have come and gone. It cancels the compaction, not the chat.
    script = [{"parts": [f"Answer {i}: " + "details " * 100]} for i in range(3)]
    t, server = chat([*script, {"parts": ["Summary"], "hang": True}, answer("Still here.")])
    for i in range(3):
        t.enter(f"question {i}")
        t.wait_for(f"Answer {i}:").wait_for(at_prompt)
    t.enter("/compact")
    t.wait_for(lambda _: len(server.requests()) == 4)  # the summary request: it stalls
    t.child.kill(signal.SIGINT)
    t.wait_for("compaction cancelled: the conversation is unchanged").wait_for(at_prompt)
    t.enter("are you there?")
    t.wait_for("Still here.")
    messages = server.requests()[-1]["body"]["messages"]
    assert [m["content"] for m in messages if m["role"] == "user"] == [
        "question 0", "question 1", "question 2", "are you there?"
    ]  # fmt: skip
    exits_cleanly(t)


def test_a_resize_mid_answer_leaves_no_fragments(chat: Chats) -> None:
    words = " ".join(f"word{i}" for i in range(40))
    text = f"First paragraph.\n\n{words}\n\nLast line."
    t, _ = chat([{"parts": [text], "delay": 0.03, "piece_chars": 4}], cols=100)
    t.enter("talk")
    t.wait_for("First paragraph.")
    t.resize(30, 60)
    t.wait_for("Last line.").wait_for(at_prompt)
    lines = t.lines()
    assert lines.count("First paragraph.") == 1 and lines.count("Last line.") == 1
    assert not any("writing…" in line or "thinking…" in line for line in lines)
    assert all(len(line) <= 100 for line in lines)
    rendered = " ".join(lines[lines.index("First paragraph.") + 1 : lines.index("Last line.")])
    assert " ".join(rendered.split()) == words  # every word once, in order
    exits_cleanly(t)


def test_commands_help_new_and_unknown(chat: Chats) -> None:
    t, _ = chat([])
    t.enter("/help")
    t.wait_for("/resume")
    t.enter("/nonsense")
    t.wait_for("unknown command /nonsense (/help lists them)")
    t.enter("/new")
    t.wait_for(lambda t: sum(line.startswith("new session ") for line in t.lines()) == 2)
    exits_cleanly(t)


def test_slash_commands_complete(chat: Chats) -> None:
    t, _ = chat([])
    t.type("/comp")
    t.type("\t")
    t.wait_for(lambda t: t.cursor_line().startswith("> /compact"))
    t.enter()
    t.wait_for("nothing to compact yet: the conversation is 0 messages")
    exits_cleanly(t)


def test_resume_reprints_the_last_turns_and_history_is_per_workspace(chat: Chats) -> None:
    t, server = chat([answer("Noted: the code word is tulip."), answer("It was tulip.")])
    t.enter("remember the code word tulip")
    t.wait_for("Noted: the code word is tulip.").wait_for(at_prompt)
    session_id = next(line for line in t.lines() if line.startswith("new session ")).split()[-1]
    exits_cleanly(t)

    again, _ = chat(server)
    again.type("\x1b[A")  # Up: the input history of this workspace
    again.wait_for(lambda t: t.cursor_line() == "> remember the code word tulip")
    again.ctrl("u")
    again.enter("/sessions")
    again.wait_for(lambda t: any(session_id in line and "1 turn" in line for line in t.lines()))
    again.enter(f"/resume {session_id.removeprefix('session-')[:8]}")
    again.wait_for(f"resumed session {session_id}")
    # The reprint follows the note: wait for it whole (a loaded machine draws it later).
    again.wait_for("Noted: the code word is tulip.")
    lines = again.lines()
    at = lines.index(f"resumed session {session_id}")
    assert lines[at + 1 : at + 3] == [
        "> remember the code word tulip",
        "Noted: the code word is tulip.",
    ]
    again.enter("what was it?")
    again.wait_for("It was tulip.")
    exits_cleanly(again)


def test_continue_and_yes(chat: Chats, tmp_path: Path) -> None:
    run = {"tool_call": {"name": "bash", "arguments": {"command": "echo hi", "description": "x"}}}
    t, server = chat([answer("First."), answer(run), answer("Ran it.")])
    t.enter("start")
    t.wait_for("First.")
    exits_cleanly(t)
    again, _ = chat(server, "-c", "--yes")
    again.wait_for("--yes: every tool call is approved")
    again.wait_for(lambda t: "> start" in t.lines() and "First." in t.lines())  # reprinted
    again.enter("run it")
    again.wait_for("Ran it.").wait_for(at_prompt)
    assert not any("needs your approval" in line for line in again.lines())
    exits_cleanly(again)


def test_continue_skips_a_chat_closed_without_a_prompt(chat: Chats) -> None:
    t, server = chat([answer("First.")])
    t.enter("start")
    t.wait_for("First.")
    exits_cleanly(t)
    empty, _ = chat(server)
    empty.wait_for(at_prompt)
    exits_cleanly(empty)
    again, _ = chat(server, "-c")
    again.wait_for(lambda t: "> start" in t.lines() and "First." in t.lines())
    exits_cleanly(again)


def test_compact_an_ordinary_conversation(chat: Chats) -> None:
    script = [{"parts": [f"Answer {i}: " + "details " * 100]} for i in range(3)]
    t, server = chat([*script, "Summary: three questions about details."])
    for i in range(3):
        t.enter(f"question {i}")
        t.wait_for(f"Answer {i}:").wait_for(at_prompt)
    t.enter("/compact")
    t.wait_for("⇣ compacted into a summary: 5 messages (seq ")
    shown = t.text().replace("\n", " ")  # the receipt wraps
    assert re.search(
        r"context [\d,]+ → [\d,]+ tokens, by deepseek-official:deepseek-v4-flash, "
        r"summary sha256:[0-9a-f]{16}",
        shown,
    )
    assert server.requests()[-1]["body"]["messages"][-1]["content"].startswith("Summarise")
    exits_cleanly(t)


def test_plain_prints_the_raw_text(chat: Chats) -> None:
    t, _ = chat([answer("Some **bold** and `code`:\n\n- item")], "--plain")
    t.enter("hi")
    t.wait_for("- item").wait_for(at_prompt)
    lines = t.lines()
    at = lines.index("Some **bold** and `code`:")
    assert lines[at + 1 : at + 3] == ["", "- item"]
    exits_cleanly(t)


@pytest.mark.skipif(
    asyncio.run(probe("bwrap", network=False)) is not None, reason="bubblewrap cannot run here"
)
def test_sandbox_shows_what_commands_may_do(chat: Chats, tmp_path: Path) -> None:
    t, _ = chat([answer("unused")])
    t.enter("/sandbox")
    t.wait_for("limits:")
    rows = {line.split(":", 1)[0].strip(): line for line in t.lines() if ":" in line}
    assert rows["sandbox"].startswith("sandbox:") and "workspace-write" in rows["sandbox"]
    assert str(workspace(tmp_path)) in rows["writes"]
    assert ".git/hooks/" in rows["read-only"]
    assert "~/.ssh" in rows["unreadable"] or "/.ssh" in rows["unreadable"]
    assert "none" in rows["network"]
    exits_cleanly(t)


def test_the_prompt_is_not_steer_after_a_failed_turn(chat: Chats) -> None:
    t, _ = chat([{"http_error": {"status": 401, "message": "bad key"}}, answer("Fine now.")])
    t.enter("hi")
    t.wait_for("bad key")
    t.wait_for(at_prompt)  # `> `, not `steer » `: the turn is over
    t.enter("again")
    t.wait_for("Fine now.")
    exits_cleanly(t)


def test_the_prompt_is_not_steer_after_an_approval(chat: Chats) -> None:
    run = tool_call("bash", command="echo hi", description="Say hi")
    t, _ = chat([answer(run), answer("Done after the answer.")])
    t.enter("say hi")
    t.wait_for("allow?")
    t.enter("n")
    t.wait_for("Done after the answer.")
    t.wait_for(at_prompt)  # `> `, not `steer » `: the turn is over
    exits_cleanly(t)


def test_the_prompt_is_not_steer_after_ctrl_c_at_an_approval(chat: Chats) -> None:
    run = tool_call("bash", command="echo hi", description="Say hi")
    t, _ = chat([answer(run), answer("unused")])
    t.enter("say hi")
    t.wait_for("allow?")
    t.ctrl("c")  # cancels the turn, and the question it asks
    t.wait_for(at_prompt)  # `> `, not `steer » ` nor the question
    assert not t.cursor_line().startswith("steer")
    exits_cleanly(t)


def test_an_invalid_answer_asks_again_and_then_the_prompt_is_not_steer(chat: Chats) -> None:
    run = tool_call("bash", command="echo hi", description="Say hi")
    t, _ = chat([answer(run), answer("Done after the answer.")])
    t.enter("say hi")
    t.wait_for("allow?")
    t.enter("maybe")  # not an answer: asked again
    t.wait_for("'maybe': answer y, s, a, n or r")
    t.wait_for(lambda t: t.cursor_line().startswith("allow?"))  # the question, not `steer`
    t.enter("n")
    t.wait_for("Done after the answer.")
    t.wait_for(at_prompt)
    exits_cleanly(t)


def test_a_chat_closed_without_a_prompt_stores_nothing(chat: Chats, tmp_path: Path) -> None:
    """Opened, `/new`, closed: no turn ever started, so no session is stored (not even the
    records written when a session is created); the chat with a prompt is."""
    sessions = tmp_path / "sessions"
    t, server = chat([answer("Stored.")])
    t.wait_for(at_prompt)
    t.enter("/new")
    t.wait_for(lambda t: sum(line.startswith("new session ") for line in t.lines()) == 2)
    exits_cleanly(t)
    assert not sessions.exists() or not any(sessions.rglob("session.jsonl"))
    used, _ = chat(server)
    used.enter("keep this one")
    used.wait_for("Stored.")
    exits_cleanly(used)
    assert len(list(sessions.rglob("session.jsonl"))) == 1


def test_an_answer_taller_than_the_screen_leaves_no_blank_block_in_scrollback(
    chat: Chats,
) -> None:
    lines = [f"line {i:02d} of a long answer." for i in range(60)]
    t, _ = chat([answer("\n\n".join(lines))], rows=20)
    t.enter("tell me a lot")
    t.wait_for("line 59 of a long answer.")
    t.wait_for(at_prompt)
    seen = t.lines()
    start = seen.index("> tell me a lot")
    shown = [line for line in seen[start:] if line.startswith("line ")]
    assert shown == lines  # every line once, in order
    body = seen[seen.index(shown[0]) : seen.index(shown[-1]) + 1]
    blank_runs = [len(list(g)) for k, g in itertools.groupby(body, key=bool) if not k]
    assert max(blank_runs, default=0) <= 1  # paragraphs, not a blank block
    exits_cleanly(t)


def test_model_and_reasoning_switch_the_session_from_the_next_request(chat: Chats) -> None:
    t, server = chat([answer("On flash."), answer("On pro."), answer("Thinking harder.")])
    t.enter("hello")
    t.wait_for("On flash.").wait_for(at_prompt)
    t.enter("/model")
    t.wait_for("model: deepseek-official:deepseek-v4-flash")
    t.enter("/model deepseek:deepseek-v4-pro")
    t.wait_for("switched to deepseek-official:deepseek-v4-pro: the next request re-pays")
    t.enter("and now?")
    t.wait_for("On pro.").wait_for(at_prompt)
    t.wait_for("deepseek-official/deepseek-v4-pro · /help")  # the bottom line follows
    t.enter("/reasoning high")  # the effort pro takes anyway: nothing to switch
    t.wait_for("already on deepseek-official:deepseek-v4-pro")
    t.enter("/reasoning max")
    t.wait_for("switched to deepseek-official:deepseek-v4-pro (reasoning max)")
    t.enter("/reasoning extreme")
    t.wait_for("unknown effort 'extreme'")
    t.enter("think")
    t.wait_for("Thinking harder.").wait_for(at_prompt)
    models = [r["body"]["model"] for r in server.requests()]
    assert models == ["deepseek-v4-flash", "deepseek-v4-pro", "deepseek-v4-pro"]
    last = server.requests()[-1]["body"]
    assert last.get("reasoning_effort") == "max" or "max" in str(last.get("thinking"))
    exits_cleanly(t)
