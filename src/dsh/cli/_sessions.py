"""`dsh sessions list | show ID | resume ID [task] | repair ID`: persisted sessions."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..kernel import Context, boot
from ..llm import Message
from ._render import call_summary, describe_end, result_summary
from ._runtime import CliError, build_profile, corrupt_log

if TYPE_CHECKING:
    from rich.console import Console

    from ..persistence import SessionPersistence
    from ..session import SessionEvent


async def _persistence(profile: list[Path] | None) -> tuple[Context, SessionPersistence]:
    ctx = await boot(build_profile(profile))
    persistence = ctx.get("session_persistence")
    if persistence is None:
        await ctx.owner.dispose()
        raise CliError("no session persistence is configured (mount the 'persistence' plugin)")
    return ctx, persistence


def _when(created_at: int) -> str:
    return datetime.fromtimestamp(created_at / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


async def list_sessions(profile: list[Path] | None, as_json: bool) -> int:
    ctx, persistence = await _persistence(profile)
    try:
        headers = sorted(await persistence.list(), key=lambda h: h.created_at, reverse=True)
    finally:
        await ctx.owner.dispose()
    for header in headers:
        if as_json:
            print(json.dumps(header.to_json(), ensure_ascii=False))
        else:
            print(f"{header.id}  {_when(header.created_at)}  {header.cwd or '-'}")
    if not headers and not as_json:
        print("no sessions yet", file=sys.stderr)
    return 0


async def show_session(profile: list[Path] | None, session_id: str, as_json: bool) -> int:
    from rich.console import Console

    from ..persistence import CorruptLogError, UnknownSessionError

    ctx, persistence = await _persistence(profile)
    try:
        stored = await persistence.inspect(session_id)
    except UnknownSessionError:
        raise CliError(f"no stored session {session_id!r} (see `dsh sessions list`)") from None
    except CorruptLogError as exc:
        raise CliError(corrupt_log(exc, session_id)) from None
    finally:
        await ctx.owner.dispose()
    if as_json:
        print(json.dumps(stored.header.to_json(), ensure_ascii=False))
        for event in stored.events:
            print(json.dumps(event.to_json(), ensure_ascii=False))
        return 0
    console = Console(highlight=False)
    console.print(
        f"session {stored.id} · {_when(stored.header.created_at)} · {stored.header.cwd or '-'}",
        style="bold",
        markup=False,
        soft_wrap=True,
    )
    for event in stored.events:
        _transcript_line(console, event)
    if stored.repair:
        console.print("(the log ends in an interrupted turn; resuming repairs it)", style="dim")
    return 0


async def repair_session(profile: list[Path] | None, session_id: str) -> int:
    from ..persistence import UnknownSessionError

    ctx, persistence = await _persistence(profile)
    try:
        report = await persistence.salvage(session_id)
    except UnknownSessionError:
        raise CliError(f"no stored session {session_id!r} (see `dsh sessions list`)") from None
    finally:
        await ctx.owner.dispose()
    if report.side_file is None:
        print(f"{report.location}: intact, nothing to repair ({report.kept} events)")
    else:
        print(
            f"kept {report.kept} events of {report.location}; moved {report.moved} "
            f"line{'s' if report.moved != 1 else ''} ({report.moved_bytes} bytes) to "
            f"{report.side_file}"
        )
    return 0


def _transcript_line(console: Console, event: SessionEvent) -> None:
    data: Any = event.data
    kind = event.type
    if kind == "user/message":
        message = Message.from_json(data)
        style = "bold" if message.source.get("kind") == "user" else "dim"
        console.print(f"> {message.text}", style=style, markup=False, soft_wrap=True)
    elif kind == "assistant/message":
        text = Message.from_json(data["message"]).text
        if text:
            console.print(text, markup=False, soft_wrap=True)
    elif kind == "tool/call":
        console.print(
            f"● {call_summary(data['name'], data['arguments'])}",
            style="cyan",
            markup=False,
            soft_wrap=True,
        )
    elif kind == "tool/result":
        block = Message.from_json(data["message"]).content[0]
        text = "".join(getattr(b, "text", "") for b in getattr(block, "content", ()))
        for i, line in enumerate(result_summary(text)):
            console.print(
                ("  ⎿ " if i == 0 else "    ") + line, style="dim", markup=False, soft_wrap=True
            )
    elif kind == "turn/end" and data["reason"]["kind"] != "completed":
        console.print(
            f"[turn {data['turn']} {describe_end(data['reason'])}]",
            style="red",
            markup=False,
            soft_wrap=True,
        )
