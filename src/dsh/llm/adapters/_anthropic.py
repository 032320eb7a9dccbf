"""`AnthropicPlugin`: provider routes over the Anthropic Messages API — Claude, and DeepSeek's
Anthropic-compatible endpoint (preset `deepseek`)."""

from __future__ import annotations

import os
from typing import Annotated, Any, ClassVar, Literal

import msgspec
from msgspec import Meta

from ...kernel import ConfigRecord, Context, Injects
from .._adapter import ModelInfo
from .._runtime import LLM
from ._adapter import mount_adapter
from ._config import ConnectionConfig, ModelConfig, check_unique_providers
from ._deepseek import DEEPSEEK_MODELS, FALLBACK_MODEL
from ._endpoint import Endpoint
from ._messages_request import MessagesDialect, ThinkingStyle

__all__ = ["AnthropicConfig", "AnthropicPlugin", "MessagesRouteConfig"]

Preset = Literal["anthropic", "deepseek"]

_CLAUDE_FALLBACK = ModelInfo(
    provider="",
    id="",
    name="",
    context_window=200_000,
    default_max_tokens=8192,
    reasoning_efforts=("off", "low", "medium", "high", "max"),
)
"""Claude models are not listed: any id passes, with these capabilities (no thinking unless
an effort is asked for)."""

_PRESETS: dict[Preset, dict[str, Any]] = {
    "anthropic": {
        "name": "Anthropic",
        "base_url": "https://api.anthropic.com",
        "base_url_env": "ANTHROPIC_BASE_URL",
        "api_key_env": "ANTHROPIC_API_KEY",
        "thinking": "adaptive",
        "cache_control": True,
    },
    "deepseek": {
        "name": "DeepSeek (Anthropic API)",
        "base_url": "https://api.deepseek.com/anthropic",
        "base_url_env": None,
        "api_key_env": "DEEPSEEK_API_KEY",
        "thinking": "enabled",
        "cache_control": False,  # DeepSeek caches prefixes by itself
    },
}


class MessagesRouteConfig(ConnectionConfig, kw_only=True):
    """One Messages route. Keys left out come from the `preset`."""

    provider: Annotated[str, Meta(min_length=1)] = "anthropic"
    preset: Preset = "anthropic"
    name: str | None = None
    base_url: str | None = None
    """Default: `$ANTHROPIC_BASE_URL`, else `https://api.anthropic.com` (preset `deepseek`:
    `https://api.deepseek.com/anthropic`); `/v1/messages` is appended."""
    api_key_env: str | None = None
    """Default `ANTHROPIC_API_KEY` (`DEEPSEEK_API_KEY`); `""` sends no key."""
    thinking: ThinkingStyle | None = None
    cache_control: bool | None = None
    anthropic_version: str = "2023-06-01"
    models: list[ModelConfig] = msgspec.field(default_factory=list)
    headers: dict[str, str] = msgspec.field(default_factory=dict)
    extra_body: dict[str, Any] = msgspec.field(default_factory=dict)

    def endpoint(self) -> Endpoint:
        preset = _PRESETS[self.preset]
        env = preset["base_url_env"]
        base = self.base_url or (env and os.environ.get(env)) or preset["base_url"]
        base = base.rstrip("/").removesuffix("/v1")
        key_env = preset["api_key_env"] if self.api_key_env is None else self.api_key_env
        provider = self.provider
        if self.preset == "deepseek":
            models = {m.id: msgspec.structs.replace(m, provider=provider) for m in DEEPSEEK_MODELS}
            fallback = FALLBACK_MODEL
        else:
            models, fallback = {}, _CLAUDE_FALLBACK
        models.update({m.id: m.info(provider) for m in self.models})
        dialect = MessagesDialect(
            thinking=self.thinking or preset["thinking"],
            cache_control=(
                preset["cache_control"] if self.cache_control is None else self.cache_control
            ),
            version=self.anthropic_version,
            default_max_tokens=fallback.default_max_tokens or 8192,
        )
        return Endpoint(
            provider=provider,
            name=self.name or preset["name"],
            url=base + "/v1/messages",
            api_key_env=key_env or None,
            models=models,
            fallback=fallback,
            dialect=dialect,
            api="messages",
            retry_policy=self.retry.policy(),
            stream=self.stream,
            headers=dict(self.headers),
            extra_body=dict(self.extra_body),
            connect_timeout_s=self.connect_timeout_s,
            idle_timeout_s=self.idle_timeout_s,
            call_timeout_s=self.call_timeout_s,
        )


class AnthropicConfig(ConfigRecord):
    routes: list[MessagesRouteConfig] = msgspec.field(
        default_factory=lambda: [MessagesRouteConfig()]
    )

    def __post_init__(self) -> None:
        check_unique_providers(self.routes)


class AnthropicPlugin:
    """Serves the Messages routes of its config (by default one: `anthropic`)."""

    name: ClassVar[str] = "anthropic"
    Config: ClassVar[type[AnthropicConfig]] = AnthropicConfig
    inject: ClassVar[Injects] = (LLM,)

    @staticmethod
    def apply(ctx: Context, config: AnthropicConfig) -> None:
        if config.routes:
            mount_adapter(ctx, [route.endpoint() for route in config.routes])
