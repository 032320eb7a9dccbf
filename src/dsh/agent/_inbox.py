"""The inbox: two FIFOs projected from durable `agent/inbox/spliced` events."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from ..events import InboxSplicedEvent, TypedEvent, append, typed
from ..llm import UserMessage
from ..session import InvalidEventError
from ._types import SendTarget

if TYPE_CHECKING:
    from ..session import Session


class Inbox:
    """`next_turn` (queued prompts) and `next_step` (steering and injected context).

    Every mutation is first appended to the session as `agent/inbox/spliced`, then applied,
    so pending work survives a resume. Construction replays the splices after the seed
    boundary (a fork does not inherit its parent's pending work).
    """

    __slots__ = ("next_step", "next_turn", "session")

    def __init__(self, session: Session) -> None:
        self.session = session
        self.next_turn: list[UserMessage] = []
        self.next_step: list[UserMessage] = []
        start = session.header.seed_length or 0
        for event in session.events[start:]:
            if event.type == InboxSplicedEvent.type:
                self._apply(typed(event))

    def _list(self, target: SendTarget) -> list[UserMessage]:
        return self.next_turn if target == "next-turn" else self.next_step

    def _apply(self, event: TypedEvent) -> None:
        if not isinstance(event, InboxSplicedEvent):
            raise InvalidEventError(f"agent/inbox/spliced #{event.seq} is not a splice")
        items = self._list("next-turn" if event.target == "next-turn" else "next-step")
        removed = event.removed_count or 0
        items[event.start : event.start + removed] = list(event.inserted)

    @property
    def has_pending(self) -> bool:
        return bool(self.next_turn or self.next_step)

    def splice(
        self,
        target: SendTarget,
        start: int,
        delete_count: int,
        inserted: Sequence[UserMessage] = (),
        *,
        canceled: bool = False,
    ) -> list[UserMessage]:
        """Durably replace `delete_count` items at `start` with `inserted`; returns the removed."""
        items = self._list(target)
        start = max(0, min(start, len(items)))
        delete_count = max(0, min(delete_count, len(items) - start))
        if not delete_count and not inserted:
            return []
        ids = {m.id for m in self.next_turn} | {m.id for m in self.next_step}
        ids -= {m.id for m in items[start : start + delete_count]}
        for message in inserted:
            if message.id in ids:
                raise ValueError(f"message {message.id} is already in the inbox")
            ids.add(message.id)
        spliced = InboxSplicedEvent(
            target=target,
            start=start,
            removed_count=delete_count or None,
            inserted=tuple(inserted),
            outcome="canceled" if canceled and delete_count else None,
        )
        append(self.session, spliced)
        removed = items[start : start + delete_count]
        items[start : start + delete_count] = list(inserted)
        return removed

    def push(self, target: SendTarget, message: UserMessage) -> None:
        self.splice(target, len(self._list(target)), 0, [message])

    def claim_prompt(self) -> UserMessage | None:
        """Take the oldest queued prompt (at a turn boundary)."""
        removed = self.splice("next-turn", 0, 1)
        return removed[0] if removed else None

    def claim_steering(self, limit: int | None = None) -> list[UserMessage]:
        """Take the next-step items (at a step boundary): all of them, or the oldest `limit`."""
        count = len(self.next_step) if limit is None else limit
        return self.splice("next-step", 0, count)

    def clear(self) -> list[tuple[SendTarget, UserMessage]]:
        """Drop everything pending (next-step first); the splices are marked canceled."""
        dropped: list[tuple[SendTarget, UserMessage]] = []
        for target in ("next-step", "next-turn"):
            removed = self.splice(target, 0, len(self._list(target)), canceled=True)
            dropped.extend((target, m) for m in removed)
        return dropped

    def pending(self) -> Iterable[UserMessage]:
        yield from self.next_step
        yield from self.next_turn
