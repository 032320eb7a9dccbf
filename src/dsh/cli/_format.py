"""How the transcript reads: one-line tool calls, tool results that keep their whitespace,
turn outcomes, the usage line, and rich renderables turned into terminal lines."""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import RenderableType

    from ..events import TurnEndReason
    from ..session import Usage

PREVIEW = 80
RESULT_LINES = 3
RESULT_WIDTH = 160


def preview(text: str, width: int = PREVIEW) -> str:
    """`text` on one line (whitespace runs collapsed), cut to `width`."""
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def call_summary(name: str, raw_arguments: str) -> str:
    """`name(key=value, …)` with long values shortened."""
    try:
        args = json.loads(raw_arguments) if raw_arguments.strip() else {}
    except ValueError:
        return f"{name}({preview(raw_arguments, 60)})"
    if not isinstance(args, dict):
        return f"{name}({preview(json.dumps(args), 60)})"
    parts = [f"{k}={_value(v)}" for k, v in args.items()]
    return f"{name}({', '.join(parts)})"


def _value(value: object) -> str:
    """A value as JSON, shortened; a string keeps its spaces (an `edit`'s indentation is
    what makes it match) and, shortened, its closing quote."""
    if isinstance(value, str):
        return '"' + _cut(json.dumps(value, ensure_ascii=False)[1:-1], 38) + '"'
    return preview(json.dumps(value, ensure_ascii=False), 40)


_STATUS = re.compile(r"\[(exit code: -?\d+|timed out after \d+ms|killed by signal: \w+)\]$")
"""A command's status line (`bash`): shown however long the output above it."""
_WRITTEN = re.compile(r"<path>(.*)</path>\n<type>file</type>\n<content>\n(Created|Updated) file")


def result_summary(text: str, lines: int = RESULT_LINES, *, tool: str | None = None) -> list[str]:
    """The first lines of a tool result as they are (indentation and inner spacing kept,
    tabs expanded, long lines cut), and how many more were collapsed; a `read` result is
    summarised by the lines it returned, a `write` result by what it did to which file."""
    if tool == "read":
        count = _read_lines(text)
        return [f"read {count} line{'s' if count != 1 else ''}"]
    written = _WRITTEN.search(text) if tool == "write" else None
    if written is not None:  # the model's `<path>…</path> <type>file</type>` shape, told plainly
        return [f"{written.group(2).lower()} {written.group(1)}"]
    rows = text.rstrip("\n").splitlines() or [""]
    status = [row for row in rows[lines:] if _STATUS.match(row)]  # a failure never hides
    shown = [_cut(row.expandtabs(4).rstrip(), RESULT_WIDTH) for row in rows[:lines]]
    if len(rows) > lines + len(status):
        more = len(rows) - lines - len(status)
        shown.append(f"… ({more} more line{'s' if more != 1 else ''})")
    return shown + status


def _read_lines(text: str) -> int:
    """The lines a `read` result shows: those of its content before the footer (the content
    is just the footer when there are none)."""
    content = text.partition("<content>\n")[2]
    end = content.rfind("\n\n(")
    return 0 if end < 0 else content[:end].count("\n") + 1


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def describe_end(reason: TurnEndReason | None) -> str:
    """One line for a `turn/end` reason (None: the log has none)."""
    if reason is None:
        return "unknown"
    if reason.kind == "error":
        error = reason.error
        return f"error: {error.code}: {error.message}" if error else "error: UNKNOWN: "
    if reason.kind == "aborted":
        from ..plugins.usage import budget_stop

        stop = budget_stop(reason)
        if stop is not None:
            return stop.line()
        return f"cancelled ({reason.cause.kind if reason.cause else 'user'})"
    return reason.kind


def _tokens(count: int) -> str:
    """`980`, `12.3k`, `456k`, `1.24M`."""
    if count < 1000:
        return str(count)
    if count >= 1_000_000:
        return f"{count / 1_000_000:.2f}M"
    return f"{count / 1000:.1f}k" if count < 100_000 else f"{count // 1000}k"


def usage_line(usage: Usage, cost: float | None = None, session: float | None = None) -> str | None:
    """`↑ 12.3k in (85% cached) · ↓ 420 out · $0.0031 (session $0.0207)`; cost only when a
    price is known, the session's when it is more than this one's. None when the provider
    reported nothing."""
    total_in = usage.total_input_tokens
    if total_in == 0 and usage.output_tokens == 0:
        return None
    parts = [f"↑ {_tokens(total_in)} in"]
    ratio = usage.cache_hit_ratio
    if ratio is not None and usage.cache_read_tokens:
        parts[0] += f" ({ratio:.0%} cached)"
    parts.append(f"↓ {_tokens(usage.output_tokens)} out")
    if cost is not None:
        parts.append(f"${cost:.4f}")
        if session is not None and session > cost + 5e-5:
            parts[-1] += f" (session ${session:.4f})"
    return " · ".join(parts)


def terminal_lines(renderable: RenderableType, width: int, *, color: bool) -> list[str]:
    """`renderable` as terminal lines of at most `width` cells, with ANSI styles when
    `color`, and without the padding rich adds to the right (so a narrower terminal later
    does not wrap blank cells into extra lines)."""
    from rich.console import Console
    from rich.segment import Segment

    console = Console(
        width=max(20, width),
        force_terminal=color,
        no_color=not color,
        color_system="256" if color else None,
        highlight=False,
    )
    lines = console.render_lines(renderable, console.options, pad=False)
    out = []
    for line in lines:
        segments = list(line)
        while segments and not segments[-1].text.strip() and not _has_background(segments[-1]):
            segments.pop()
        if segments and not _has_background(segments[-1]):
            last = segments[-1]
            segments[-1] = Segment(last.text.rstrip(), last.style, last.control)
        out.append("".join(_styled(s) if color else s.text for s in segments))
    return out


_FRAMES: dict[tuple[str, bool], tuple[str, str]] = {}
"""What `terminal_lines` puts before and after a one-line text, by (style, color)."""


def styled_lines(text: str, style: str, width: int, *, color: bool) -> list[str]:
    """`terminal_lines(Text(text, style=style), width, color=color)`. A printable one-line
    text that fits comes out as the style's codes around it, learnt once per style from
    rich: a transcript line then costs no rich rendering (it took ~0.15 ms)."""
    from rich.cells import cell_len
    from rich.text import Text

    one_line = text.isprintable() and text and not text[-1].isspace()
    if one_line and cell_len(text) <= max(20, width):
        frame = _FRAMES.get((style, color))
        if frame is None:
            probe = terminal_lines(Text("x", style=style), 20, color=color)[0]
            before, _, after = probe.partition("x")
            frame = _FRAMES[(style, color)] = (before, after)
        return [f"{frame[0]}{text}{frame[1]}"]
    return terminal_lines(Text(text, style=style), width, color=color)


def _has_background(segment: Any) -> bool:
    style = segment.style
    return style is not None and style.bgcolor is not None


def _styled(segment: Any) -> str:
    from rich.color import ColorSystem

    text: str = segment.text
    style = segment.style
    return style.render(text, color_system=ColorSystem.EIGHT_BIT) if style else text


TAIL_LINES = 5
"""How many lines of a running call's output the live area shows."""
TAIL_WIDTH = 160
_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b[@-_]|[\x00-\x08\x0b-\x1f\x7f]")


TAIL_KEEP = TAIL_LINES * TAIL_WIDTH * 2
"""How much of a running call's output is kept to draw its tail from."""


def output_tail(text: str) -> str:
    """The last `TAIL_LINES` lines of `text`, as a terminal would leave them: a carriage
    return starts its line again (progress bars), escape and control codes are dropped,
    long lines are cut."""
    lines = text.split("\n")[-TAIL_LINES - 1 :]
    if lines and not lines[-1]:
        lines.pop()  # the text ended with a newline
    kept = [_ESCAPES.sub("", line.rsplit("\r", 1)[-1].expandtabs()) for line in lines]
    return "\n".join(_cut(line.rstrip(), TAIL_WIDTH) for line in kept[-TAIL_LINES:])
