"""The surfaces write transcript lines themselves when they can: byte for byte what rich
would have written, on every kind of console."""

from __future__ import annotations

import io
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console
from rich.text import Text

from dsh.cli._format import call_summary, styled_lines, terminal_lines
from dsh.cli._surfaces import PipeSurface

STYLES = ["", "cyan", "dim", "red", "bold yellow", "dim italic", "green", "magenta", "blue"]
CONSOLES = {
    "pipe": {},
    "truecolor": {"force_terminal": True, "color_system": "truecolor"},
    "256": {"force_terminal": True, "color_system": "256"},
    "standard": {"force_terminal": True, "color_system": "standard"},
    "no-color": {"force_terminal": True, "no_color": True},
    "narrow": {"force_terminal": True, "width": 20},
}
TEXTS = st.one_of(
    st.text(),
    st.lists(st.sampled_from([*"ab :\t\n\r\x1b[m⎿●✓…", ":smile:", "    "])).map("".join),
    st.sampled_from(['● read(path="hello.txt")', "  ⎿ read 3 lines", "x :thumbs_up: y", "a   "]),
)


def rich_wrote(options: dict[str, object], text: str, style: str) -> str:
    out = io.StringIO()
    Console(file=out, highlight=False, emoji=False, **options).print(  # type: ignore[arg-type]
        text, style=style, markup=False, highlight=False, soft_wrap=True
    )
    return out.getvalue()


@pytest.mark.parametrize("kind", list(CONSOLES))
@settings(max_examples=150, deadline=None)
@given(texts=st.lists(st.tuples(TEXTS, st.sampled_from(STYLES)), max_size=4))
def test_notes_are_written_as_rich_would(kind: str, texts: list[tuple[str, str]]) -> None:
    options = CONSOLES[kind]
    out = io.StringIO()
    surface = PipeSurface(io.StringIO(), Console(file=out, highlight=False, emoji=False, **options))  # type: ignore[arg-type]
    for text, style in texts:
        surface.note(text, style)
    assert out.getvalue() == "".join(rich_wrote(options, t, s) for t, s in texts)


@pytest.mark.parametrize("color", [True, False])
@settings(max_examples=300, deadline=None)
@given(
    text=TEXTS,
    style=st.sampled_from([*STYLES, "on red", "bold white on blue"]),
    width=st.integers(1, 100),
)
def test_terminal_note_lines_are_rich_lines(text: str, style: str, width: int, color: bool) -> None:
    expected = terminal_lines(Text(text, style=style), width, color=color)
    assert styled_lines(text, style, width, color=color) == expected


def test_a_shortened_string_argument_keeps_its_closing_quote() -> None:
    command = "for i in 1 2 3 4 5 6 7; do echo line$i; sleep 1; done"
    shown = call_summary("bash", json.dumps({"command": command, "description": "slow", "n": 3}))
    expected = 'command="for i in 1 2 3 4 5 6 7; do echo line$…", description="slow", n=3'
    assert shown == f"bash({expected})"


def test_token_counts_read_at_a_glance() -> None:
    from dsh.cli._format import usage_line
    from dsh.session import Usage

    line = usage_line(Usage(input_tokens=1_236_800, output_tokens=123_456), 0.5)
    assert line == "↑ 1.24M in · ↓ 123k out · $0.5000"
    assert usage_line(Usage(input_tokens=980, output_tokens=12_345)) == "↑ 980 in · ↓ 12.3k out"


def test_a_commands_status_line_is_never_folded_away() -> None:
    from dsh.cli._format import result_summary

    output = "\n".join(str(n) for n in range(1, 21)) + "\n[exit code: 1]"
    assert result_summary(output, tool="bash") == [
        "1",
        "2",
        "3",
        "… (17 more lines)",
        "[exit code: 1]",
    ]
    assert result_summary("5\n[stderr]\nerr\n[exit code: 1]", tool="bash")[-1] == "[exit code: 1]"


def test_call_arguments_keep_their_spaces() -> None:
    shown = call_summary("edit", json.dumps({"old_string": "    return a - b"}))
    assert shown == 'edit(old_string="    return a - b")'
