from collections.abc import AsyncIterator, Sequence

import pytest

from dsh import Context
from dsh.llm import (
    BlockAssembler,
    GenerateOptions,
    LlmPlugin,
    LlmRuntime,
    Message,
    StreamChunk,
    user_message,
)


@pytest.fixture
def ctx_plugins() -> Sequence[object]:
    return [LlmPlugin]


@pytest.fixture
def llm(ctx: Context) -> LlmRuntime:
    return ctx.llm


def request(
    provider: str = "scripted", model: str = "m", *messages: Message, **kw: object
) -> GenerateOptions:
    return GenerateOptions(provider, model, messages or (user_message("hi"),), **kw)  # type: ignore[arg-type]


async def collect(stream: AsyncIterator[StreamChunk]) -> list[StreamChunk]:
    return [chunk async for chunk in stream]


async def assemble(stream: AsyncIterator[StreamChunk]) -> BlockAssembler:
    asm = BlockAssembler()
    async for chunk in stream:
        asm.push(chunk)
    return asm
