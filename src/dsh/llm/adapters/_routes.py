"""Model routes in one place: a model string `provider:model` → the route serving it.

The CLI (`--model`, `--base-url`, `DSH_MODEL`) and `dsh.Agent` both resolve model strings
here, so a string means the same route everywhere.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal

import msgspec

if TYPE_CHECKING:
    from ...profiles import Profile

__all__ = ["ROUTE_PREFIXES", "ModelRoute", "RouteError", "parse_model"]

Api = Literal["chat-completions", "messages", "profile"]

OPENAI_BASE_URL = "https://api.openai.com/v1"


class RouteError(ValueError):
    """A model string that names no route; the message says what to write instead."""


class ModelRoute(msgspec.Struct, frozen=True):
    """Where a model string leads.

    `provider` is the route id an adapter serves (what `AgentOptions.provider` names) and
    `model` the model id sent to it. `row` is the profile row that mounts the route (None when
    the profile already serves it, e.g. `scripted` or a route declared in a profile);
    `apply(profile)` layers it. `api_key_env` is the variable the key is read from (None: no
    key is sent).
    """

    provider: str
    model: str
    api: Api = "profile"
    base_url: str | None = None
    api_key_env: str | None = None
    row: Mapping[str, Any] | None = msgspec.field(default=None)

    def apply(self, profile: Profile) -> Profile:
        """`profile` with this route mounted: its row added, or merged into the row of the same
        id (so a profile's own settings for that plugin are kept), and the agent loop's row
        naming it (the model of the agents made without one, and what `dsh config show`
        lists)."""
        rows = [] if self.row is None else [dict(self.row)]
        if profile.row(AGENT_LOOP) is not None:
            named = {"provider": self.provider, "model": self.model}
            rows.append({"id": AGENT_LOOP, "config": named})
        for row in rows:
            current = profile.row(row["id"])
            if current is not None:
                row["config"] = {**(current.config or {}), **row.get("config", {})}
                row["disabled"] = False
        return profile.layered(rows, source=f"<model {self.provider}:{self.model}>")

    @property
    def missing_credential(self) -> str | None:
        """The unset environment variable this route needs, if any."""
        env = self.api_key_env
        return env if env is not None and not os.environ.get(env) else None


AGENT_LOOP = "agent-loop"
"""The profile row of the agent loop (its config names the default route)."""

Builder = Callable[[str, str | None], ModelRoute]


def _deepseek(model: str, base_url: str | None) -> ModelRoute:
    config = {} if base_url is None else {"base_url": base_url}
    base = base_url or os.environ.get("DEEPSEEK_BASE_URL") or "https://api.deepseek.com"
    row = {"id": "deepseek", "name": "deepseek", "config": config}
    return ModelRoute("deepseek-official", model, "chat-completions", base, "DEEPSEEK_API_KEY", row)


def _openai(model: str, base_url: str | None) -> ModelRoute:
    base = base_url or os.environ.get("OPENAI_BASE_URL") or OPENAI_BASE_URL
    # OpenAI itself needs the key; a local server at another URL usually takes none, so the
    # key is sent only when it is set.
    official = base.rstrip("/") == OPENAI_BASE_URL
    key_env = "OPENAI_API_KEY" if official or os.environ.get("OPENAI_API_KEY") else None
    route = {"provider": "openai", "name": "OpenAI", "base_url": base, "api_key_env": key_env}
    row = {"id": "openai", "name": "openai_compat", "config": {"routes": [route]}}
    return ModelRoute("openai", model, "chat-completions", base, key_env, row)


def _messages(provider: str, preset: str, key_env: str, default_base: str) -> Builder:
    def build(model: str, base_url: str | None) -> ModelRoute:
        env_base = os.environ.get("ANTHROPIC_BASE_URL") if preset == "anthropic" else None
        base = base_url or env_base or default_base
        route: dict[str, Any] = {"provider": provider, "preset": preset}
        if base_url is not None:
            route["base_url"] = base_url
        row = {"id": provider, "name": "anthropic", "config": {"routes": [route]}}
        return ModelRoute(provider, model, "messages", base, key_env, row)

    return build


ROUTE_PREFIXES: Mapping[str, Builder] = {
    "deepseek": _deepseek,
    "openai": _openai,
    "anthropic": _messages(
        "anthropic", "anthropic", "ANTHROPIC_API_KEY", "https://api.anthropic.com"
    ),
    "deepseek-anthropic": _messages(
        "deepseek-anthropic", "deepseek", "DEEPSEEK_API_KEY", "https://api.deepseek.com/anthropic"
    ),
}
"""The providers a model string may name, each building its route from (model, base_url)."""


def parse_model(spec: str, *, base_url: str | None = None) -> ModelRoute:
    """The route for a model string.

    - `deepseek:<model>`: the default route `deepseek-official` (`DEEPSEEK_API_KEY`,
      `DEEPSEEK_BASE_URL`); a string without a provider (`deepseek-v4-pro`) means the same.
    - `openai:<model>`: Chat Completions at `OPENAI_BASE_URL` (default
      `https://api.openai.com/v1`) with `OPENAI_API_KEY`.
    - `anthropic:<model>`: the Messages API at `ANTHROPIC_BASE_URL` (default
      `https://api.anthropic.com`) with `ANTHROPIC_API_KEY`.
    - `deepseek-anthropic:<model>`: DeepSeek's Anthropic-compatible endpoint
      (`https://api.deepseek.com/anthropic`, `DEEPSEEK_API_KEY`).
    - `<route>:<model>` for any other route id: a route the profile mounts itself (a
      `scripted` model, an `openai_compat` route of a profile); `scripted` alone is
      `scripted:scripted`.

    `base_url` overrides the provider's URL. Raises `RouteError` for an empty model or a
    `base_url` given for a route the profile mounts.
    """
    spec = spec.strip()
    if spec == "scripted":
        spec = "scripted:scripted"
    prefix, colon, model = spec.partition(":")
    if not colon:
        prefix, model = "deepseek", spec
    if not prefix or not model:
        known = ", ".join(f"{p}:<model>" for p in ROUTE_PREFIXES)
        raise RouteError(f"model {spec!r} names no model: write provider:model ({known})")
    build = ROUTE_PREFIXES.get(prefix)
    if build is not None:
        return build(model, base_url)
    if base_url is not None:
        known = ", ".join(ROUTE_PREFIXES)
        raise RouteError(
            f"base_url applies to the built-in providers ({known}), not to route {prefix!r}: "
            f"write openai:{model} for an OpenAI-compatible server"
        )
    return ModelRoute(prefix, model)
