"""`LlmTitlePlugin`: after the fallback title, ask a model for a better one."""

from __future__ import annotations

import logging
from typing import Annotated, ClassVar

from msgspec import Meta

from ..._context import Context
from ...agent import AGENTS
from ...events import SessionTitleEvent, TitleRequestEvent, append, typed_as
from ...kernel import CancelSignal, ConfigRecord, Injects
from ...llm import (
    LLM,
    BlockAssembler,
    GenerateOptions,
    Json,
    Message,
    plugin_source,
    text_of,
    user_message,
)
from ...session import SESSION_DISPOSED, SESSION_EVENT, Session, SessionEventPayload
from ._fallback import fallback_title, title_event

__all__ = ["PLUGIN_ID", "SYSTEM", "TITLE_PROVIDER", "LlmTitleConfig", "LlmTitlePlugin", "clean"]

_log = logging.getLogger("dsh.plugins.session_title")

TITLE_PROVIDER = "session-title-llm"
"""`titleProvider` of the request record and `source.provider` of the title it gives."""
PLUGIN_ID = "session-title-llm"

SYSTEM = (
    "You name conversations between a person and a coding agent. Given the person's first "
    "message, reply with a short title for the conversation: about five words, in the "
    "language of the message, plain text on one line, without quotes, a trailing period, "
    "Markdown or code."
)


class LlmTitleConfig(ConfigRecord):
    provider: str | None = None
    """The route of the title call; default: the session's own provider and model."""
    model: str | None = None
    max_tokens: Annotated[int, Meta(gt=0)] = 64
    max_chars: Annotated[int, Meta(ge=8)] = 80


def clean(text: str, max_chars: int) -> str:
    """The first non-empty line, without quotes or Markdown around it, at most `max_chars`."""
    line = next((ln for ln in text.splitlines() if ln.strip()), "")
    line = line.strip().strip("\"'`*#_ ").rstrip(".").strip()
    return fallback_title(line, words=len(line.split()) or 1, max_chars=max_chars)


class LlmTitlePlugin:
    """When a session gets its fallback title, one side call (`purpose: session-title`)
    asks a model for a better one: `session/title-llm-request`, then `session/title` with
    source `provider`. A failed call leaves the fallback (a warning in the log)."""

    name: ClassVar[str] = "session_title_llm"
    Config = LlmTitleConfig
    inject: ClassVar[Injects] = (LLM, AGENTS)

    @staticmethod
    def apply(ctx: Context, config: LlmTitleConfig) -> None:
        signals: dict[str, CancelSignal] = {}

        def on_event(payload: SessionEventPayload) -> None:
            session = payload.session
            titled = typed_as(payload.event, SessionTitleEvent)
            source = None if titled is None else titled.source
            if titled is None or not isinstance(source, dict) or source.get("kind") != "fallback":
                return
            route = _route(ctx, config, session)
            if route is None:
                _log.warning("no model route to title session %s; keeping its fallback", session.id)
                return
            signal = signals[session.id] = CancelSignal()
            seqs = list(titled.message_seqs)
            ctx.owner.spawn(_titled(ctx, config, session, seqs, route, signal))

        def disposed(session: Session) -> None:
            signal = signals.pop(session.id, None)
            if signal is not None:
                signal.abort("session disposed")

        ctx.on(SESSION_EVENT, on_event)
        ctx.on(SESSION_DISPOSED, disposed)


def _route(ctx: Context, config: LlmTitleConfig, session: Session) -> tuple[str, str] | None:
    context = session.request_context() or {}
    agent = ctx.agents.get(session.id)
    options = agent.options if agent is not None else None
    provider = config.provider or context.get("provider") or (options and options.provider)
    model = config.model or context.get("model") or (options and options.model)
    if isinstance(provider, str) and isinstance(model, str):
        return provider, model
    return None


async def _titled(
    ctx: Context,
    config: LlmTitleConfig,
    session: Session,
    seqs: list[int],
    route: tuple[str, str],
    signal: CancelSignal,
) -> None:
    prompts = [Message.from_json(session.events[s].data).text for s in seqs]
    request = user_message(
        "The person's first message:\n\n" + "\n\n".join(prompts), plugin_source(PLUGIN_ID)
    )
    record = TitleRequestEvent(
        title_provider=TITLE_PROVIDER,
        message_seqs=tuple(seqs),
        route={"provider": route[0], "model": route[1]},
        system=SYSTEM,
        messages=(request,),
        max_tokens=config.max_tokens,
    )
    if not session.attached:
        return
    append(session, record)
    options = GenerateOptions(
        provider=route[0],
        model=route[1],
        messages=(request,),
        system=SYSTEM,
        max_tokens=config.max_tokens,
        signal=signal,
        session_id=session.id,
        purpose="session-title",
    )
    assembler = BlockAssembler()
    async for chunk in ctx.llm.stream(options):  # a failure arrives as the finish chunk
        assembler.push(chunk)
    finish = assembler.finish
    title = clean(text_of(assembler.blocks()), config.max_chars)
    if finish.failed or not title:
        why = (
            finish.failure.message
            if finish.failure
            else finish.kind
            if finish.failed
            else "no text"
        )
        _log.warning("no model title for session %s (%s); keeping its fallback", session.id, why)
        return
    if session.attached and not signal.aborted:
        source: dict[str, Json] = {
            "kind": "provider",
            "provider": TITLE_PROVIDER,
            "model": {"provider": route[0], "model": route[1]},
        }
        append(session, title_event(title, seqs, source))
