"""A loopback OpenAIServer and an llm runtime serving it through the real adapters."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any

import pytest

from dsh import Context
from dsh.kernel import CancelSignal
from dsh.llm import (
    BlockAssembler,
    GenerateOptions,
    LlmCallConfig,
    LlmPlugin,
    Message,
    StreamChunk,
    user_message,
)
from dsh.llm.adapters import DeepSeekPlugin
from dsh.testing import OpenAIServer

KEY = "sk-test-secret-0123456789"
PROVIDER = "deepseek-official"


@dataclass
class Call:
    chunks: list[StreamChunk]
    assembler: BlockAssembler

    @property
    def failure_code(self) -> str | None:
        failure = self.assembler.finish.failure
        return None if failure is None else failure.code


@dataclass
class Harness:
    ctx: Context
    server: OpenAIServer

    async def mount(self, **config: Any) -> None:
        await self.ctx.plugin(DeepSeekPlugin, {"base_url": self.server.base_url, **config})

    async def call(
        self,
        *messages: Message,
        model: str = "deepseek-v4-flash",
        provider: str = PROVIDER,
        signal: CancelSignal | None = None,
        **config: Any,
    ) -> Call:
        """One prepared call (model defaults applied), fully assembled."""
        prepared = await self.ctx.llm.prepare_call(LlmCallConfig(provider, model, **config))
        options = prepared.request(messages or (user_message("hi"),), signal=signal)
        return await self.stream(options, prepared.stream)

    async def stream(self, options: GenerateOptions, streamer: Any = None) -> Call:
        assembler = BlockAssembler()
        chunks: list[StreamChunk] = []
        async for chunk in (streamer or self.ctx.llm.stream)(options):
            chunks.append(chunk)
            assembler.push(chunk)
        return Call(chunks, assembler)

    @property
    def bodies(self) -> list[Any]:
        return [r.body for r in self.server.requests]


@pytest.fixture
async def server() -> AsyncIterator[OpenAIServer]:
    async with OpenAIServer() as running:
        yield running


@pytest.fixture
def ctx_plugins() -> Sequence[object]:
    return [LlmPlugin]


@pytest.fixture
def harness(server: OpenAIServer, ctx: Context, monkeypatch: pytest.MonkeyPatch) -> Harness:
    monkeypatch.setenv("DEEPSEEK_API_KEY", KEY)
    return Harness(ctx, server)
