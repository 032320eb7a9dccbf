"""`SpillPlugin` (name `spill`): provides the spill store and replaces oversized text
results with a preview and the path of the whole."""

from __future__ import annotations

import logging
from typing import Annotated, ClassVar

import msgspec
from msgspec import Meta

from ..._context import Context
from ...kernel import ConfigRecord, Next, redact_secrets
from ...llm import TextBlock
from ...persistence import SESSION_PERSISTENCE, CachedSpills, SpillArea
from ...session import SESSION_DISPOSED, Session
from ...tools import TOOLS_POST_EXECUTE, Accept, PostDecision, PostExecute
from ._preview import preview
from ._store import SPILLS, Spills

__all__ = ["SpillConfig", "SpillPlugin"]

_log = logging.getLogger("dsh.plugins.spill")


class SpillConfig(ConfigRecord):
    max_chars: Annotated[int, Meta(gt=0)] = 30_000
    """A text result longer than this is saved to a file and previewed."""
    head_chars: Annotated[int, Meta(gt=0)] = 8_000
    tail_chars: Annotated[int, Meta(gt=0)] = 4_000
    skip: list[str] = msgspec.field(default_factory=lambda: ["read"])
    """Tools whose results are never spilled (`read` pages by itself: spilling it would loop)."""


class SpillPlugin:
    """Spill files for oversized tool output, where the persistence service keeps them."""

    name: ClassVar[str] = "spill"
    Config = SpillConfig

    @staticmethod
    def apply(ctx: Context, config: SpillConfig) -> None:
        if config.head_chars + config.tail_chars >= config.max_chars:
            raise ValueError("head_chars + tail_chars must stay under max_chars")
        spills = Spills(lambda: _area(ctx))
        ctx.owner.effect(spills.close)
        ctx.provide(SPILLS, spills)
        skip = frozenset(config.skip)

        async def post_execute(
            payload: PostExecute, next: Next[PostExecute, PostDecision]
        ) -> PostDecision:
            decision = await next()
            exec = payload.exec
            if not isinstance(decision, Accept) or exec.name in skip or exec.parent is not None:
                return decision
            content = payload.result.content if decision.content is None else decision.content
            if isinstance(content, str):
                content = (TextBlock(content),)
            if not all(isinstance(b, TextBlock) for b in content):
                return decision
            text = "\n".join(b.text for b in content if isinstance(b, TextBlock))
            if len(text) <= config.max_chars or exec.session is None:
                return decision
            text = redact_secrets(text)  # the file is read back into the conversation
            try:
                path = await spills.save(exec, f"{exec.call_id}-{exec.name}.txt", text)
            except OSError as exc:
                _log.warning("cannot spill the result of %s: %s", exec.name, exc)
                return decision
            shown = preview(text, config.head_chars, config.tail_chars).text(len(text), path)
            return Accept(shown, decision.additional_contexts)

        def disposed(session: Session) -> None:
            spills.discard(session.id)

        ctx.on(TOOLS_POST_EXECUTE, post_execute)
        ctx.on(SESSION_DISPOSED, disposed)


def _area(ctx: Context) -> SpillArea:
    """The persistence service's choice, or a temporary area without one."""
    choose = getattr(ctx.get(SESSION_PERSISTENCE), "spill_area", None)
    area = choose() if callable(choose) else None
    return area if isinstance(area, SpillArea) else CachedSpills.temporary()
