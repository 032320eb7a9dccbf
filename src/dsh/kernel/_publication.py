"""`Publication`: the enter / announce / detach life of one entry of a live registry."""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Self

__all__ = ["Publication"]


class Publication:
    """One entry of a live registry (sessions, agents): entered, announced once, detached once.

    It is entered under `key` in `entries` when made. `announce()` runs `_announce()` (the
    creation event; a raise there is a veto and propagates) the first time only, and never
    after the detach. `detach()` runs once: the entry leaves `entries` (unless a newer entry
    took its key), then `_withdraw(announced)`, where an announced entry emits its disposed
    event, so every delivered creation has its pair. A detach requested while the
    announcement is being dispatched waits until that dispatch unwinds. Subclasses
    implement the two hooks.
    """

    __slots__ = ("_entries", "announced", "announcing", "detach_pending", "detached", "key")

    def __init__(self, entries: MutableMapping[str, Self], key: str) -> None:
        self._entries = entries
        self.key = key
        entries[key] = self
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
        if self._entries.get(self.key) is self:
            del self._entries[self.key]
        self._withdraw(self.announced)

    def _announce(self) -> None:
        raise NotImplementedError

    def _withdraw(self, announced: bool) -> None:
        raise NotImplementedError
