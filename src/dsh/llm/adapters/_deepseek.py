"""`DeepSeekPlugin`: the `deepseek-official` route over DeepSeek's Chat Completions API."""

from __future__ import annotations

import os
from typing import Annotated, ClassVar

import msgspec
from msgspec import Meta

from ...kernel import Context, Injects
from .._adapter import ModelInfo
from .._runtime import LLM
from ._adapter import mount_adapter
from ._config import ConnectionConfig, ModelConfig
from ._endpoint import Endpoint
from ._request import Dialect

__all__ = ["DEEPSEEK_MODELS", "FALLBACK_MODEL", "DeepSeekConfig", "DeepSeekPlugin"]

DEFAULT_BASE_URL = "https://api.deepseek.com"
_EFFORTS = ("off", "low", "high", "max")


def _model(
    id: str, name: str, efforts: tuple[str, ...] = _EFFORTS, default: str = "high"
) -> ModelInfo:
    return ModelInfo(
        provider="",
        id=id,
        name=name,
        context_window=1_000_000,
        default_max_tokens=256_000,
        reasoning_efforts=efforts,
        default_effort=default,
    )


DEEPSEEK_MODELS: tuple[ModelInfo, ...] = (
    _model("deepseek-v4-pro", "DeepSeek V4 Pro"),
    _model("deepseek-v4-flash", "DeepSeek V4 Flash"),
    _model("deepseek-flash", "DeepSeek Flash"),
    _model("deepseek-chat", "DeepSeek Chat (non-thinking)", ("off",), "off"),
    _model("deepseek-reasoner", "DeepSeek Reasoner (thinking)", ("low", "high", "max")),
)
"""The built-in model table (provider filled in at mount). Effort `off` disables thinking."""

FALLBACK_MODEL = _model("", "")
"""Unknown model ids pass through with the table's default capabilities."""


class DeepSeekConfig(ConnectionConfig, kw_only=True):
    provider: Annotated[str, Meta(min_length=1)] = "deepseek-official"
    base_url: str | None = None
    """Default: `$DEEPSEEK_BASE_URL`, else `https://api.deepseek.com`; `/chat/completions`
    is appended."""
    api_key_env: Annotated[str, Meta(min_length=1)] = "DEEPSEEK_API_KEY"
    models: list[ModelConfig] = msgspec.field(default_factory=list)
    """Added to the built-in table; an entry with a built-in id replaces it."""


class DeepSeekPlugin:
    """Serves DeepSeek's API (route `deepseek-official` by default)."""

    name: ClassVar[str] = "deepseek"
    Config: ClassVar[type[DeepSeekConfig]] = DeepSeekConfig
    inject: ClassVar[Injects] = (LLM,)

    @staticmethod
    def endpoint(config: DeepSeekConfig) -> Endpoint:
        provider = config.provider
        base = config.base_url or os.environ.get("DEEPSEEK_BASE_URL") or DEFAULT_BASE_URL
        models = {m.id: msgspec.structs.replace(m, provider=provider) for m in DEEPSEEK_MODELS}
        models.update({m.id: m.info(provider) for m in config.models})
        return Endpoint(
            provider=provider,
            name="DeepSeek",
            url=base.rstrip("/") + "/chat/completions",
            api_key_env=config.api_key_env,
            models=models,
            fallback=FALLBACK_MODEL,
            dialect=Dialect(effort_style="deepseek-thinking", replay_reasoning=True),
            retry_policy=config.retry.policy(),
            stream=config.stream,
            connect_timeout_s=config.connect_timeout_s,
            idle_timeout_s=config.idle_timeout_s,
            call_timeout_s=config.call_timeout_s,
        )

    @staticmethod
    def apply(ctx: Context, config: DeepSeekConfig) -> None:
        mount_adapter(ctx, [DeepSeekPlugin.endpoint(config)])
