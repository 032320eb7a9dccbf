"""`dsh sessions list | show ID | resume ID [task]`: persisted sessions."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..kernel import Context, boot
from ..llm import Message
from ..plugins.usage import PRICES
from ..session import ModelRoute, SessionUsage, Usage, session_usage, usage_by
from ._render import call_summary, describe_end, result_summary, usage_line
from ._runtime import CliError, build_profile

if TYPE_CHECKING:
    from rich.console import Console

    from ..persistence import SessionPersistence
    from ..plugins.usage import PriceTable
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

    from ..persistence import UnknownSessionError

    ctx, persistence = await _persistence(profile)
    try:
        stored = await persistence.inspect(session_id)
        prices = ctx.get(PRICES)
    except UnknownSessionError:
        raise CliError(f"no stored session {session_id!r} (see `dsh sessions list`)") from None
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
    summary = usage_summary(session_usage(stored.events), prices)
    console.print(summary, style="dim", markup=False, soft_wrap=True)
    return 0


def usage_summary(report: SessionUsage, prices: PriceTable | None) -> str:
    """`usage: 2 turns · 5 model requests · 3 tool calls · 1m 04s · ↑ 12.3k in … · $0.0031`."""
    total = report.total
    parts = [
        _count(len(report.turns), "turn"),
        _count(total.requests, "model request"),
        _count(total.tool_calls, "tool call"),
        _duration(report.wall_ms),
    ]
    tokens = usage_line(total, prices.cost(report.by_model) if prices is not None else None)
    if tokens is not None:
        parts.append(tokens)
    return "usage: " + " · ".join(parts)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _duration(ms: int) -> str:
    seconds = ms / 1000
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes}m {rest:02d}s" if minutes < 60 else f"{minutes // 60}h {minutes % 60:02d}m"


def _day_and_route(event: SessionEvent, route: ModelRoute) -> tuple[str, ModelRoute]:
    return datetime.fromtimestamp(event.time / 1000, UTC).strftime("%Y-%m-%d"), route


async def session_stats(profile: list[Path] | None, as_json: bool) -> int:
    """Totals of every stored session (subagents' included) by day (UTC) and model."""
    ctx, persistence = await _persistence(profile)
    totals: dict[tuple[str, ModelRoute], Usage] = {}
    try:
        prices = ctx.get(PRICES)
        for header in await persistence.list():
            events = await persistence.read_from(header.id, 0)
            for key, usage in usage_by(events, _day_and_route).items():
                totals[key] = totals.get(key, Usage()) + usage
    finally:
        await ctx.owner.dispose()
    if not totals:
        if not as_json:
            print("no usage recorded yet", file=sys.stderr)
        return 0
    by_model: dict[ModelRoute, Usage] = {}
    for (day, route), usage in sorted(totals.items()):
        by_model[route] = by_model.get(route, Usage()) + usage
        cost = prices.cost({route: usage}) if prices is not None else None
        if as_json:
            print(json.dumps(_stats_json(day, route, usage, cost)))
        else:
            print(_stats_row(day, "/".join(route).strip("/") or "-", usage, cost))
    if not as_json:
        total = sum(by_model.values(), Usage())
        print(_stats_row("total", "", total, prices.cost(by_model) if prices else None))
    return 0


def _stats_row(day: str, model: str, usage: Usage, cost: float | None) -> str:
    tokens = usage_line(usage, cost) or "no tokens reported"
    calls = f"{_count(usage.requests, 'request')}, {_count(usage.tool_calls, 'tool call')}"
    return f"{day:<10}  {model:<36}  {calls:<26}  {tokens}"


def _stats_json(day: str, route: ModelRoute, usage: Usage, cost: float | None) -> dict[str, Any]:
    return {
        "day": day,
        "provider": route[0],
        "model": route[1],
        "requests": usage.requests,
        "toolCalls": usage.tool_calls,
        "inputTokens": usage.input_tokens,
        "cacheReadTokens": usage.cache_read_tokens,
        "cacheWriteTokens": usage.cache_write_tokens,
        "outputTokens": usage.output_tokens,
        "reasoningTokens": usage.reasoning_tokens,
        "costUsd": cost,
    }


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
