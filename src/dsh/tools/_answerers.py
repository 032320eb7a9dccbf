"""Who answers a person's questions (approval asks, the model's questions): the most recent
registration still alive, so a terminal, an editor or a web page can each plug in."""

from __future__ import annotations

from typing import TYPE_CHECKING, Generic, TypeVar

if TYPE_CHECKING:
    from ..kernel import Disposer, Owner

__all__ = ["Answerers"]

A = TypeVar("A")


class Answerers(Generic[A]):
    """A stack of answerers: `current` is the latest one whose registration lives; disposing
    it restores the one before."""

    __slots__ = ("_stack",)

    def __init__(self) -> None:
        self._stack: list[A] = []

    @property
    def current(self) -> A | None:
        return self._stack[-1] if self._stack else None

    def add(self, answerer: A, owner: Owner) -> Disposer:
        """Register `answerer` until the returned disposer runs (or `owner` is disposed)."""
        owner.check_active()
        stack = self._stack
        stack.append(answerer)

        def remove() -> None:
            for i in range(len(stack) - 1, -1, -1):
                if stack[i] is answerer:
                    del stack[i]
                    return

        return owner.effect(remove)
