"""`Endpoint`: one provider route served over HTTP, as a provider plugin describes it to
`HttpAdapter` (and as `_http.py` prepares its requests)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

import msgspec

from .._adapter import ModelInfo, RetryPolicy
from .._content import Json
from ._messages_request import MessagesDialect
from ._request import Dialect

__all__ = ["Api", "Endpoint"]

Api = Literal["chat-completions", "messages"]


class Endpoint(msgspec.Struct, frozen=True):
    """One provider route served over HTTP.

    `api` is the wire protocol and `url` its full endpoint (`…/chat/completions`,
    `…/v1/messages`). `api_key_env` names the environment variable holding the key (taken out
    of the environment by `read_secret` when mounted, read again at each call; None sends
    none). `fallback` describes models missing from `models` (None: unknown models get no
    metadata, so nothing is defaulted or checked for them). `dialect` is a `Dialect` for Chat
    Completions, a `MessagesDialect` for Messages. `idle_timeout_s` bounds each wait for a
    byte (the response's first one too); `call_timeout_s` bounds the whole call.
    """

    provider: str
    name: str
    url: str
    api_key_env: str | None
    models: Mapping[str, ModelInfo] = msgspec.field(default_factory=dict)
    fallback: ModelInfo | None = None
    dialect: Dialect | MessagesDialect = msgspec.field(default_factory=Dialect)
    api: Api = "chat-completions"
    retry_policy: RetryPolicy = msgspec.field(default_factory=RetryPolicy)
    stream: bool = True
    headers: Mapping[str, str] = msgspec.field(default_factory=dict)
    extra_body: Mapping[str, Json] = msgspec.field(default_factory=dict)
    connect_timeout_s: float = 10.0
    idle_timeout_s: float = 60.0
    call_timeout_s: float = 600.0
