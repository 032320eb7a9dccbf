"""Other protocols served beside the page (A2A, AG-UI): what a door is, and a door whose
package loads on its first request."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

from starlette.routing import BaseRoute, Route, Router
from starlette.types import Receive, Scope, Send

__all__ = ["Door", "LazyDoor"]


class Door(Protocol):
    """Another protocol served beside the page: its routes, the paths that need no token
    (an agent card), and what ends it."""

    @property
    def routes(self) -> Sequence[BaseRoute]: ...
    @property
    def public_paths(self) -> frozenset[str]: ...
    async def aclose(self) -> None: ...


class LazyDoor:
    """A door built by `make` on its first request, so that its package (an extra, heavy to
    import) loads only when someone uses it: `paths` maps each of its paths to its methods."""

    def __init__(
        self,
        make: Callable[[], Door],
        paths: Mapping[str, Sequence[str]],
        public_paths: frozenset[str] = frozenset(),
    ) -> None:
        self._make = make
        self._door: Door | None = None
        self._router: Router | None = None
        self._opening = asyncio.Lock()
        self.routes: list[BaseRoute] = [
            Route(path, endpoint=self, methods=list(methods)) for path, methods in paths.items()
        ]
        self.public_paths = public_paths

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async with self._opening:
            if self._router is None:
                self._door = self._make()
                self._router = Router(routes=list(self._door.routes))
        await self._router(scope, receive, send)

    async def aclose(self) -> None:
        if self._door is not None:
            await self._door.aclose()
