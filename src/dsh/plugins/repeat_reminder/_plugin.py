"""`RepeatReminderPlugin`: notice when a model repeats the same tool call, and say so."""

from __future__ import annotations

import json
import weakref
from typing import Any, ClassVar

import msgspec

from ..._context import Context
from ...agent import PROMPT_SUBMIT, PromptDecision, PromptSubmit
from ...kernel import ConfigRecord, Injects, Next
from ...llm import Json, plugin_source, user_message
from ...tools import TOOLS, TOOLS_POST_EXECUTE, Accept, PostDecision, PostExecute

PLUGIN_ID = "repeat-tool-reminder"
"""The source plugin id of the notice (the reference runtime's, so logs read alike)."""

NOTICE = (
    "This is the same tool call, with the same arguments, several times in a row. Look at "
    "what the earlier results already told you before calling it again; if the task is not "
    "done, change the approach or the arguments rather than repeating the call."
)


class RepeatReminderConfig(ConfigRecord):
    thresholds: list[int] = msgspec.field(default_factory=lambda: [3, 5, 8])
    """Remind when the same call has been made this many times in a row."""
    exclude: list[str] = msgspec.field(default_factory=list)
    """Tools that are never counted (they do not break a run of repeats either)."""


class _Run(msgspec.Struct):
    key: str = ""
    count: int = 0


def call_key(name: str, arguments: Json) -> str:
    """The identity of a call: its name and its arguments with sorted keys."""
    return name + "\0" + json.dumps(arguments, sort_keys=True, separators=(",", ":"))


class RepeatReminderPlugin:
    name: ClassVar[str] = "repeat_reminder"
    Config = RepeatReminderConfig
    inject: ClassVar[Injects] = (TOOLS,)

    @staticmethod
    def apply(ctx: Context, config: RepeatReminderConfig) -> None:
        runs: weakref.WeakKeyDictionary[Any, _Run] = weakref.WeakKeyDictionary()
        thresholds = frozenset(config.thresholds)
        excluded = frozenset(config.exclude)

        async def after(payload: PostExecute, nxt: Next[PostExecute, PostDecision]) -> PostDecision:
            decision = await nxt()
            exec = payload.exec
            if exec.agent is None or exec.parent is not None or exec.name in excluded:
                return decision
            run = runs.setdefault(exec.agent, _Run())
            key = call_key(exec.name, exec.arguments)
            run.count = run.count + 1 if key == run.key else 1
            run.key = key
            if run.count not in thresholds or not isinstance(decision, Accept):
                return decision
            notice = user_message(
                NOTICE,
                plugin_source(PLUGIN_ID, "notice", summary=f"{exec.name} \u00d7 {run.count}"),
            )
            return Accept(decision.content, (*decision.additional_contexts, notice))

        async def prompt(
            payload: PromptSubmit, nxt: Next[PromptSubmit, PromptDecision]
        ) -> PromptDecision:
            runs.pop(payload.agent, None)  # a new prompt starts a new count
            return await nxt()

        ctx.on(TOOLS_POST_EXECUTE, after)
        ctx.on(PROMPT_SUBMIT, prompt)
