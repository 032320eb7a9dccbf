"""An O(1) snapshot of the derived model history."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from itertools import islice
from typing import overload

from ..llm import Message


class History(Sequence[Message]):
    """The first `len` messages of an append-only list, frozen at creation.

    The session only ever appends to the list it shares here (a surface replacement builds
    a new list), so a snapshot costs O(1) to take and never changes afterwards.
    """

    __slots__ = ("_items", "_len", "replay_providers")

    def __init__(
        self,
        items: list[Message],
        length: int | None = None,
        *,
        replay_providers: frozenset[str] = frozenset(),
    ) -> None:
        self._items = items
        self._len = len(items) if length is None else length
        self.replay_providers = replay_providers
        """The providers of the messages that carry `replayState`: lets the llm runtime skip
        scanning the history when all of them are served by the adapter at hand."""

    def __len__(self) -> int:
        return self._len

    @overload
    def __getitem__(self, index: int) -> Message: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[Message]: ...
    def __getitem__(self, index: int | slice) -> Message | Sequence[Message]:
        if isinstance(index, slice):
            return tuple(self._items[: self._len][index])
        if index < 0:
            index += self._len
        if not 0 <= index < self._len:
            raise IndexError("history index out of range")
        return self._items[index]

    def __iter__(self) -> Iterator[Message]:
        return islice(self._items, self._len)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, str):
            return NotImplemented
        return len(other) == self._len and all(a == b for a, b in zip(self, other, strict=False))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"History({self._len} messages)"
