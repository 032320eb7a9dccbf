"""`OpenAICompatPlugin`: provider routes declared in config, over any OpenAI-compatible
Chat Completions endpoint."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

import msgspec
from msgspec import Meta

from ...kernel import ConfigRecord, Context, Injects
from .._runtime import LLM
from ._adapter import mount_adapter
from ._config import ConnectionConfig, ModelConfig, check_unique_providers
from ._endpoint import Endpoint
from ._request import Dialect

__all__ = ["CompatRouteConfig", "OpenAICompatConfig", "OpenAICompatPlugin"]


class CompatRouteConfig(ConnectionConfig, kw_only=True):
    provider: Annotated[str, Meta(min_length=1)]
    """The route id (what `AgentOptions.provider` names)."""
    name: str | None = None
    base_url: Annotated[str, Meta(min_length=1)]
    """E.g. `https://api.openai.com/v1`; `/chat/completions` is appended."""
    api_key_env: str | None = None
    """The environment variable holding the key; None sends no `Authorization` header."""
    models: list[ModelConfig] = msgspec.field(default_factory=list)
    """Advisory: unlisted models are passed through with no metadata."""
    effort_style: Literal["reasoning-effort", "deepseek-thinking"] = "reasoning-effort"
    replay_reasoning: bool = False
    """Send assistant reasoning back as `reasoning_content` (DeepSeek-style servers)."""
    images: bool = False
    """Send image blocks as `image_url` parts (else a text placeholder)."""
    headers: dict[str, str] = msgspec.field(default_factory=dict)
    extra_body: dict[str, Any] = msgspec.field(default_factory=dict)
    """Extra top-level request fields (must not repeat the ones the adapter sets)."""

    def endpoint(self) -> Endpoint:
        return Endpoint(
            provider=self.provider,
            name=self.name or self.provider,
            url=self.base_url.rstrip("/") + "/chat/completions",
            api_key_env=self.api_key_env,
            models={m.id: m.info(self.provider) for m in self.models},
            dialect=Dialect(self.effort_style, self.replay_reasoning, self.images),
            retry_policy=self.retry.policy(),
            stream=self.stream,
            headers=dict(self.headers),
            extra_body=dict(self.extra_body),
            connect_timeout_s=self.connect_timeout_s,
            idle_timeout_s=self.idle_timeout_s,
            call_timeout_s=self.call_timeout_s,
        )


class OpenAICompatConfig(ConfigRecord):
    routes: list[CompatRouteConfig] = msgspec.field(default_factory=list)

    def __post_init__(self) -> None:
        check_unique_providers(self.routes)


class OpenAICompatPlugin:
    """Serves the routes of its config; one HTTP client for all of them."""

    name: ClassVar[str] = "openai_compat"
    Config: ClassVar[type[OpenAICompatConfig]] = OpenAICompatConfig
    inject: ClassVar[Injects] = (LLM,)

    @staticmethod
    def apply(ctx: Context, config: OpenAICompatConfig) -> None:
        if config.routes:
            mount_adapter(ctx, [route.endpoint() for route in config.routes])
