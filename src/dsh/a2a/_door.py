"""The A2A door: the Agent Card and the JSON-RPC endpoint as Starlette routes, served by the
a2a-sdk's request handler (tasks in memory) over `DshExecutor`."""

from __future__ import annotations

from pathlib import Path

from a2a.server.agent_execution import SimpleRequestContextBuilder
from a2a.server.id_generator import IDGenerator, IDGeneratorContext
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore
from starlette.routing import BaseRoute

from .._context import Context
from .._ids import uuid4_text
from ._card import agent_card
from ._executor import DshExecutor, SessionHost
from ._paths import A2A_PATH, CARD_PATH

__all__ = ["A2ADoor"]


class _SessionIds(IDGenerator):
    """A new context is a new session: its id has the shape of dsh's session ids."""

    def generate(self, context: IDGeneratorContext) -> str:
        return f"session-{uuid4_text()}"


class A2ADoor:
    """The routes of the A2A door of `host` for the server at `base_url` (its card names
    `base_url` + `/a2a`). `public_paths` need no token (the card); `aclose()` ends the
    tasks still running."""

    def __init__(self, ctx: Context, host: SessionHost, workspace: Path, base_url: str) -> None:
        self.card = agent_card(ctx, workspace, base_url.rstrip("/") + A2A_PATH)
        self.handler = DefaultRequestHandler(
            agent_executor=DshExecutor(host),
            task_store=InMemoryTaskStore(),
            agent_card=self.card,
            request_context_builder=SimpleRequestContextBuilder(context_id_generator=_SessionIds()),
        )
        self.routes: list[BaseRoute] = [
            *create_agent_card_routes(self.card, card_url=CARD_PATH),
            *create_jsonrpc_routes(self.handler, A2A_PATH, enable_v0_3_compat=True),
        ]
        self.public_paths = frozenset({CARD_PATH})

    async def aclose(self) -> None:
        await self.handler.aclose()
