"""The two ends of a `session/prompt`: the editor's content blocks as the user message, and
the turn's end as the prompt's stop reason."""

from __future__ import annotations

from collections.abc import Sequence
from urllib.parse import unquote, urlparse

from acp import RequestError
from acp.schema import (
    AudioContentBlock,
    BlobResourceContents,
    EmbeddedResourceContentBlock,
    ImageContentBlock,
    ResourceContentBlock,
    StopReason,
    TextContentBlock,
    TextResourceContents,
)

from ..events import TurnEndReason
from ..llm import ContentBlock, ImageBlock, TextBlock
from ..plugins.usage import budget_stop

__all__ = ["PromptBlock", "message_content", "stop_reason"]

PromptBlock = (
    TextContentBlock
    | ImageContentBlock
    | AudioContentBlock
    | ResourceContentBlock
    | EmbeddedResourceContentBlock
)

INTERNAL_ERROR = -32603


def message_content(blocks: Sequence[PromptBlock]) -> tuple[ContentBlock, ...]:
    """The user message of a prompt: text and images as they are, a resource link as a line
    naming it (a file as its path, for the file tools), an embedded resource as its text."""
    content: list[ContentBlock] = []
    for block in blocks:
        match block:
            case TextContentBlock(text=text):
                content.append(TextBlock(text))
            case ImageContentBlock(data=data, mime_type=media, uri=uri):
                attachment = {"data": data, "mediaType": media} if data else {"url": uri or ""}
                content.append(ImageBlock(attachment))
            case ResourceContentBlock():
                content.append(TextBlock(_link(block)))
            case EmbeddedResourceContentBlock(resource=resource):
                content.append(_embedded(resource))
            case AudioContentBlock():
                raise RequestError.invalid_params(
                    {"message": "audio is not supported: send text, images or resources"}
                )
    return tuple(content)


def _where(uri: str) -> str:
    parsed = urlparse(uri)
    return unquote(parsed.path) if parsed.scheme == "file" else uri


def _link(block: ResourceContentBlock) -> str:
    line = f"[resource link] {_where(block.uri)}"
    if block.name and block.name not in block.uri:
        line += f" ({block.name})"
    if block.description:
        line += f" — {block.description}"
    return line


def _embedded(resource: TextResourceContents | BlobResourceContents) -> ContentBlock:
    where = _where(resource.uri)
    if isinstance(resource, TextResourceContents):
        return TextBlock(f"[resource {where}]\n{resource.text}")
    media = resource.mime_type or "application/octet-stream"
    if media.startswith("image/"):
        return ImageBlock({"data": resource.blob, "mediaType": media})
    return TextBlock(f"[resource {where}: {media} data, not shown]")


def stop_reason(reason: TurnEndReason | None) -> StopReason:
    """The stop reason of a prompt whose (last) turn ended for `reason`; an `error` turn
    is the prompt's error instead."""
    if reason is None:
        return "end_turn"
    match reason.kind:
        case "aborted" | "interrupted":
            stop = budget_stop(reason)
            if stop is None:
                return "cancelled"
            # A budget: of tokens ends `max_tokens`, of requests, tool calls or cost
            # `max_turn_requests` (ACP has no closer reason for those).
            return "max_tokens" if stop.name.startswith("max-tokens") else "max_turn_requests"
        case "max-tokens":
            return "max_tokens"
        case "blocked":
            return "refusal"
        case "error":
            failure = reason.error
            detail = f"{failure.code}: {failure.message}" if failure else "the turn failed"
            raise RequestError(INTERNAL_ERROR, f"the turn failed: {detail}")
        case _:
            return "end_turn"
