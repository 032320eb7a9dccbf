"""Notices from background work (a finished job, a subagent's answer) to the agent that
started it, without letting them keep an unattended agent busy for ever."""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any

from ._events import PromptDecision, PromptSubmit

if TYPE_CHECKING:
    from ..kernel import Next
    from ..llm import UserMessage
    from ._types import Agent

__all__ = ["Notices"]


class Notices:
    """Delivers notices: into the next step of a running agent (`inject`); to an idle one as
    a new turn (`followup`), at most `max_wakes` times in a row until a person's prompt resets
    the count; past that, queued for its next turn. Register `prompt_submitted` on
    `agent/prompt-submit` so a person's prompt resets the count."""

    __slots__ = ("_wakes", "max_wakes")

    def __init__(self, max_wakes: int) -> None:
        self.max_wakes = max_wakes
        self._wakes: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()

    def deliver(self, agent: Agent, notice: UserMessage) -> None:
        if agent.accepts_next_step:
            agent.inject(notice)
        elif self._wakes.get(agent, 0) < self.max_wakes:
            self._wakes[agent] = self._wakes.get(agent, 0) + 1
            agent.followup(notice)
        else:
            agent.send(notice, "next-turn", wakeup=False)  # waits for the next turn

    async def prompt_submitted(
        self, payload: PromptSubmit, nxt: Next[PromptSubmit, PromptDecision]
    ) -> PromptDecision:
        if payload.message.source.get("kind") == "user":
            self._wakes.pop(payload.agent, None)
        return await nxt()
