"""`Delivery`: an agent's inbox with its `agent/inbox/*` notifications."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..agent import INBOX_DEQUEUE, INBOX_DISCARD, INBOX_ENQUEUE, InboxChange

if TYPE_CHECKING:
    from ..agent import Agent, AgentEvents, Inbox, Placement, SendTarget
    from ..kernel import EmitSpec
    from ..llm import UserMessage


class Delivery:
    """Every change goes through here: the inbox logs and applies it, then it is announced
    (`agent/inbox/enqueue`, `…/dequeue`, `…/discard`) with the agent as subject. Sends,
    injected tool contexts and `agent/turn-stopping` continuations are put; turns claim;
    cancel discards. Once closed (the agent is disposed), nothing more is put."""

    __slots__ = ("_events", "_subject", "closed", "inbox")

    def __init__(self, inbox: Inbox, events: AgentEvents, subject: Agent) -> None:
        self.inbox = inbox
        self._events = events
        self._subject = subject
        self.closed = False

    @property
    def steering(self) -> int:
        """Next-step items (steering, injected context) pending."""
        return len(self.inbox.next_step)

    @property
    def queued(self) -> int:
        """Prompts queued for a next turn."""
        return len(self.inbox.next_turn)

    def put(self, target: SendTarget, message: UserMessage) -> None:
        if self.closed:
            raise RuntimeError(f"agent {self.inbox.session.id} is disposed")
        self.inbox.push(target, message)
        self._announce(INBOX_ENQUEUE, message, _placement(target))

    def claim_prompt(self) -> UserMessage | None:
        """The oldest queued prompt, taken at a turn boundary."""
        prompt = self.inbox.claim_prompt()
        if prompt is not None:
            self._announce(INBOX_DEQUEUE, prompt, "queued")
        return prompt

    def claim_steering(self, limit: int | None) -> list[UserMessage]:
        """The next-step items (all, or the oldest `limit`), taken at a step boundary."""
        steering = self.inbox.claim_steering(limit)
        for message in steering:
            self._announce(INBOX_DEQUEUE, message, "steering")
        return steering

    def discard(self) -> None:
        """Drop everything pending (durable canceled splices)."""
        for target, message in self.inbox.clear():
            self._announce(INBOX_DISCARD, message, _placement(target))

    def close(self) -> None:
        self.closed = True

    def _announce(
        self, spec: EmitSpec[InboxChange], message: UserMessage, placement: Placement
    ) -> None:
        self._events.emit(spec, InboxChange(self._subject, message.id, placement))


def _placement(target: SendTarget) -> Placement:
    return "queued" if target == "next-turn" else "steering"
