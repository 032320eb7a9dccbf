"""A session's typed events as ACP `session/update`s: one rendering for the live stream and
for the replay of `session/load`, so an editor shows the same transcript either way."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeAlias

from acp.helpers import (
    plan_entry,
    start_tool_call,
    text_block,
    update_agent_message,
    update_agent_thought_text,
    update_plan,
    update_tool_call,
    update_user_message,
)
from acp.schema import (
    AgentMessageChunk,
    AgentPlanUpdate,
    AgentThoughtChunk,
    ImageContentBlock,
    PlanEntryStatus,
    TextContentBlock,
    ToolCallProgress,
    ToolCallStart,
    UserMessageChunk,
)

from ..events import (
    ApprovalDecidedEvent,
    AssistantMessageEvent,
    ReasoningDeltaEvent,
    StreamEvent,
    TextDeltaEvent,
    TodoWriteEvent,
    ToolCallEvent,
    ToolProgressEvent,
    ToolResultEvent,
    UserMessageEvent,
)
from ..llm import ContentBlock, ImageBlock, ReasoningBlock, TextBlock
from ._calls import CallView, call_view, progress_content, raw_arguments, result_content

__all__ = ["SessionUpdate", "Transcript"]

OUTPUT_CHARS = 8192
"""How much of a running call's output its live content holds (the end)."""

SessionUpdate: TypeAlias = (
    UserMessageChunk
    | AgentMessageChunk
    | AgentThoughtChunk
    | ToolCallStart
    | ToolCallProgress
    | AgentPlanUpdate
)


class Transcript:
    """Turns one session's events, in log order, into the updates an editor shows.

    `echo(message_id)` says whether a person's prompt is shown: the editor already shows the
    prompts it sent itself, not those of a replayed log. Text streamed as deltas is not
    repeated when its message is committed; a message logged without deltas (a log of
    another writer) is shown whole."""

    def __init__(self, cwd: str | None, echo: Callable[[str], bool]) -> None:
        self.cwd = cwd
        self.echo = echo
        self.calls: dict[str, CallView] = {}
        self.streamed: set[tuple[int, int]] = set()
        self.outputs: dict[str, str] = {}
        """The end of each running call's output (by call id), shown as its content."""

    def updates(self, event: StreamEvent) -> list[SessionUpdate]:
        match event:
            case UserMessageEvent(message=message):
                if event.source_kind != "user" or not self.echo(message.id):
                    return []
                return [update_user_message(b) for b in _shown(message.content)]
            case TextDeltaEvent(turn=turn, step=step, text=text):
                self.streamed.add((turn, step))
                return [update_agent_message(text_block(text))] if text else []
            case ReasoningDeltaEvent(turn=turn, step=step, text=text):
                self.streamed.add((turn, step))
                return [update_agent_thought_text(text)] if text else []
            case AssistantMessageEvent(turn=turn, step=step, message=message):
                if (turn, step) in self.streamed:
                    return []
                return _answer(message.content)
            case ToolCallEvent():
                return [self._started(event)]
            case ApprovalDecidedEvent(call_id=call_id, decision=decision):
                if decision == "deny" or call_id not in self.calls:
                    return []
                return [update_tool_call(call_id, status="in_progress")]
            case ToolResultEvent():
                return self._finished(event)
            case ToolProgressEvent():
                return self._progress(event)
            case TodoWriteEvent(todos=todos):
                entries = [plan_entry(t.content, status=_status(t.status)) for t in todos]
                return [update_plan(entries)]
            case _:
                return []

    def _started(self, event: ToolCallEvent) -> ToolCallStart:
        view = call_view(event.name, raw_arguments(event.arguments), self.cwd)
        self.calls[event.call_id] = view
        return start_tool_call(
            event.call_id,
            view.title,
            kind=view.kind,
            status="pending",
            content=[view.diff] if view.diff is not None else None,
            locations=view.locations or None,
            raw_input=view.raw_input,
        )

    def _progress(self, event: ToolProgressEvent) -> list[SessionUpdate]:
        """A running call's output so far (its end) and status, as the call's content; its
        result's content replaces it."""
        if event.call_id not in self.calls:
            return []
        output = (self.outputs.get(event.call_id, "") + event.output)[-OUTPUT_CHARS:]
        self.outputs[event.call_id] = output
        content = progress_content(output, event.message, event.fraction)
        return [update_tool_call(event.call_id, status="in_progress", content=content)]

    def _finished(self, event: ToolResultEvent) -> list[SessionUpdate]:
        self.outputs.pop(event.call_id, None)
        view = self.calls.pop(event.call_id, None)
        if view is None:
            return []  # a result whose call is not in this log (a seeded prefix)
        failed = event.is_error
        return [
            update_tool_call(
                event.call_id,
                status="failed" if failed else "completed",
                content=result_content(view, event.text, failed),
            )
        ]


_STATUSES: dict[str, PlanEntryStatus] = {s: s for s in ("pending", "in_progress", "completed")}


def _status(status: str) -> PlanEntryStatus:
    return _STATUSES.get(status, "pending")


def _shown(blocks: tuple[ContentBlock, ...]) -> list[TextContentBlock | ImageContentBlock]:
    shown: list[TextContentBlock | ImageContentBlock] = []
    for block in blocks:
        if isinstance(block, TextBlock) and block.text:
            shown.append(text_block(block.text))
        elif isinstance(block, ImageBlock):
            image = _image(block)
            if image is not None:
                shown.append(image)
    return shown


def _image(block: ImageBlock) -> ImageContentBlock | None:
    data, media = block.attachment.get("data"), block.attachment.get("mediaType")
    url = block.attachment.get("url")
    if isinstance(data, str) and isinstance(media, str):
        return ImageContentBlock(type="image", data=data, mime_type=media)
    if isinstance(url, str):
        return ImageContentBlock(type="image", data="", mime_type="image/*", uri=url)
    return None


def _answer(blocks: tuple[ContentBlock, ...]) -> list[SessionUpdate]:
    updates: list[SessionUpdate] = []
    for block in blocks:
        if isinstance(block, ReasoningBlock) and block.text:
            updates.append(update_agent_thought_text(block.text))
        elif isinstance(block, TextBlock) and block.text:
            updates.append(update_agent_message(text_block(block.text)))
    return updates
