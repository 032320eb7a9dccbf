"""The MCP servers in the page: their state, the prompt commands and resource mentions the
composer completes, and the OAuth login of a server that asks for one (its link shown in the
page; the browser comes back to the machine running dsh)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from .._context import Context
from ..plugins.mcp import MCP, McpHub

__all__ = ["McpRoutes"]

_log = logging.getLogger("dsh.web")


class McpRoutes:
    """`GET /api/mcp?session=ID` and `POST /api/mcp/{name}/login`."""

    def __init__(self, ctx: Context, agent_of: Callable[[str], object | None]) -> None:
        self._ctx = ctx
        self._agent_of = agent_of

    def _hub(self) -> McpHub | None:
        return self._ctx.get(MCP)

    async def state(self, request: Request) -> Response:
        hub = self._hub()
        if hub is None:
            return JSONResponse({"servers": [], "commands": [], "mentions": []})
        agent = self._agent(request.query_params.get("session"))
        servers = [
            {"name": s.name, "state": s.state, "auth": s.auth, "error": s.error}
            for s in hub.statuses()
        ]
        commands = [
            {"name": c.name, "description": c.description, "usage": c.usage}
            for c in hub.prompt_commands(agent)
        ]
        mentions = [
            {"text": m.text, "description": m.description, "template": m.template}
            for m in hub.mentions(agent)
        ]
        return JSONResponse({"servers": servers, "commands": commands, "mentions": mentions})

    async def login(self, request: Request) -> Response:
        """Start the login; answer its authorization URL for the page to show as a link (the
        login finishes in the background and starts the server again)."""
        from ..plugins.mcp import LoginError, login

        hub, name = self._hub(), request.path_params["name"]
        spec = hub.spec(name) if hub is not None else None
        if hub is None or spec is None:
            return JSONResponse({"error": f'no MCP server "{name}"'}, 404)
        shown: asyncio.Future[str] = asyncio.get_running_loop().create_future()

        async def browser(url: str) -> bool:
            if not shown.done():
                shown.set_result(url)
            return True

        async def run() -> None:
            try:
                if await login(spec, lambda line: None, browser=browser):
                    await hub.reconnect(name)
            except LoginError as exc:
                _log.warning("MCP login to %s: %s", name, exc)
                if not shown.done():
                    shown.set_exception(exc)

        task = self._ctx.owner.spawn(run(), name=f"dsh-web:mcp-login:{name}")
        either: list[asyncio.Future[Any]] = [shown, task]
        await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
        if not shown.done():
            return JSONResponse({"url": None, "message": f"{name} did not ask for a login"})
        if shown.exception() is not None:
            return JSONResponse({"error": str(shown.exception())}, 409)
        return JSONResponse({"url": shown.result()})

    def _agent(self, session: str | None) -> object | None:
        return self._agent_of(session) if session else None
