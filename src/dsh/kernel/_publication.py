"""`Publication`: the enter / announce / detach life of one entry of a live registry."""

from __future__ import annotations

__all__ = ["Publication"]


class Publication:
    """One entry of a live registry (sessions, agents): entered, announced once, detached once.

    `announce()` runs `_announce()` (the creation event; a raise there is a veto and
    propagates) the first time only, and never after the detach. `detach()` runs
    `_withdraw(announced)` once: the entry leaves its registry, and an announced one emits
    its disposed event, so every delivered creation has its pair. A detach requested while
    the announcement is being dispatched waits until that dispatch unwinds. Subclasses
    implement the two hooks.
    """

    __slots__ = ("announced", "announcing", "detach_pending", "detached")

    def __init__(self) -> None:
        self.announced = False
        self.announcing = False
        self.detach_pending = False
        self.detached = False

    def announce(self) -> None:
        if self.announced or self.detached:
            return
        self.announced = self.announcing = True
        try:
            self._announce()
        finally:
            self.announcing = False
            if self.detach_pending:
                self.detach()

    def detach(self) -> None:
        if self.detached:
            return
        if self.announcing:
            self.detach_pending = True
            return
        self.detached = True
        self._withdraw(self.announced)

    def _announce(self) -> None:
        raise NotImplementedError

    def _withdraw(self, announced: bool) -> None:
        raise NotImplementedError
