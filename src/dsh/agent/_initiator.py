"""The initiator scope: which agent started the work now running (process-local)."""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Coroutine, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from ..kernel import Owner
    from ._types import Agent

T = TypeVar("T")

_INITIATOR: contextvars.ContextVar[Agent | None] = contextvars.ContextVar(
    "dsh_initiator", default=None
)


class InitiatorScopeError(RuntimeError):
    pass


class InitiatorScope:
    """Carries the initiating agent through asynchronous work via a ContextVar.

    Identity only: not a liveness proof and not authority. After `close()` new boundaries
    are refused.
    """

    __slots__ = ("closed",)

    def __init__(self) -> None:
        self.closed = False

    def _check(self) -> None:
        if self.closed:
            raise InitiatorScopeError("initiator scope is disposed")

    def current(self) -> Agent | None:
        return _INITIATOR.get()

    def require(self) -> Agent:
        agent = _INITIATOR.get()
        if agent is None:
            raise InitiatorScopeError("no initiating agent is active")
        return agent

    @contextmanager
    def using(self, agent: Agent | None) -> Iterator[None]:
        """Run the block with `agent` as initiator (None hides an inherited one)."""
        self._check()
        token = _INITIATOR.set(agent)
        try:
            yield
        finally:
            _INITIATOR.reset(token)

    def spawn(
        self,
        agent: Agent,
        coro: Coroutine[object, None, T],
        *,
        owner: Owner,
        name: str | None = None,
    ) -> asyncio.Task[T]:
        """Start `coro` as a task of `owner` whose whole lifetime has `agent` as initiator."""
        self._check()
        context = contextvars.copy_context()
        context.run(_INITIATOR.set, agent)
        return owner.spawn(coro, name=name, context=context)

    def close(self) -> None:
        self.closed = True
