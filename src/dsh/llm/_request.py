"""One model request: tool schemas, call configs, generate options, and coded errors.

Records here are immutable trees of JSON values and of each other (`gc=False`): they can
be in no reference cycle, so the cycle collector never traverses them (a thousand live
sessions hold hundreds of thousands)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Literal

import msgspec

from ._chunks import LlmFailure
from ._content import Json, Message, SessionId, _ByKey

if TYPE_CHECKING:
    from ..kernel import CancelSignal

# -- requests ----------------------------------------------------------------------------------


class ToolSchema(msgspec.Struct, frozen=True, gc=False):
    """What the model is told about a tool."""

    name: str
    description: str
    parameters: Mapping[str, Json]

    def to_json(self) -> dict[str, Json]:
        parameters = self.parameters
        if type(parameters) is dict or not isinstance(parameters, dict):
            parameters = dict(parameters)
        # else a frozen dict (the session's `FrozenDict`, as registered tools have): shared,
        # so the logs of a thousand sessions hold one copy of each schema.
        return {"name": self.name, "description": self.description, "parameters": parameters}

    @staticmethod
    def from_json(data: Mapping[str, Json]) -> ToolSchema:
        raw: _ByKey = data
        return ToolSchema(raw["name"], raw.get("description", ""), raw.get("parameters", {}))


class LlmCallConfig(msgspec.Struct, frozen=True, gc=False):
    """The routing and sampling of one model call (a subset of `GenerateOptions`)."""

    provider: str
    model: str
    reasoning_effort: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    stop: tuple[str, ...] | None = None
    top_p: float | None = None

    def to_json(self) -> dict[str, Json]:
        out: dict[str, Json] = {"provider": self.provider, "model": self.model}
        if self.max_tokens is not None:
            out["maxTokens"] = self.max_tokens
        if self.reasoning_effort is not None:
            out["reasoningEffort"] = self.reasoning_effort
        if self.temperature is not None:
            out["temperature"] = self.temperature
        if self.top_p is not None:
            out["topP"] = self.top_p
        if self.stop is not None:
            out["stop"] = list(self.stop)
        return out

    @staticmethod
    def from_json(data: Mapping[str, Json]) -> LlmCallConfig:
        raw: _ByKey = data
        stop = raw.get("stop")
        return LlmCallConfig(
            provider=raw.get("provider", ""),
            model=raw.get("model", ""),
            reasoning_effort=raw.get("reasoningEffort"),
            temperature=raw.get("temperature"),
            max_tokens=raw.get("maxTokens"),
            stop=None if stop is None else tuple(stop),
            top_p=raw.get("topP"),
        )

    def request(
        self,
        messages: Sequence[Message],
        *,
        system: str | None = None,
        tools: Sequence[ToolSchema] = (),
        signal: CancelSignal | None = None,
        session_id: SessionId | None = None,
        purpose: Purpose | None = None,
    ) -> GenerateOptions:
        """Options carrying exactly this config, for `messages`."""
        return GenerateOptions(
            self.provider,
            self.model,
            messages,
            system=system,
            tools=tuple(tools),
            reasoning_effort=self.reasoning_effort,
            temperature=self.temperature,
            max_tokens=self.max_tokens,
            stop=self.stop,
            top_p=self.top_p,
            signal=signal,
            session_id=session_id,
            purpose=purpose,
        )


class AdapterDefaults(msgspec.Struct, frozen=True, gc=False):
    """Which fields of a prepared call config the adapter filled in."""

    reasoning_effort: bool = False
    max_tokens: bool = False

    def to_json(self) -> dict[str, Json]:
        out: dict[str, Json] = {}
        if self.reasoning_effort:
            out["reasoningEffort"] = True
        if self.max_tokens:
            out["maxTokens"] = True
        return out

    @staticmethod
    def from_json(data: Mapping[str, Json] | None) -> AdapterDefaults:
        data = data or {}
        return AdapterDefaults(bool(data.get("reasoningEffort")), bool(data.get("maxTokens")))


Purpose = Literal["compaction", "session-title"]


class GenerateOptions(msgspec.Struct, frozen=True):
    """One model request: routing, sampling, the system prompt, history and tools."""

    provider: str
    model: str
    messages: Sequence[Message]
    """The history, oldest first (an immutable snapshot)."""
    system: str | None = None
    tools: tuple[ToolSchema, ...] = ()
    reasoning_effort: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    stop: tuple[str, ...] | None = None
    signal: CancelSignal | None = None
    session_id: SessionId | None = None
    purpose: Purpose | None = None
    top_p: float | None = None

    @property
    def call_config(self) -> LlmCallConfig:
        return LlmCallConfig(
            self.provider,
            self.model,
            self.reasoning_effort,
            self.temperature,
            self.max_tokens,
            self.stop,
            self.top_p,
        )


# -- errors ------------------------------------------------------------------------------------


class HarnessError(Exception):
    """The base of dsh's coded errors."""

    def __init__(self, message: str, code: str = "UNKNOWN") -> None:
        super().__init__(message)
        self.code = code


class LlmError(HarnessError):
    """A model call failed; `failure` carries the serializable facts."""

    def __init__(self, failure: LlmFailure) -> None:
        super().__init__(failure.message, failure.code)
        self.failure = failure


def error_chain(exc: BaseException) -> str:
    """`message[: cause[: cause…]]`, for logs and `turn/end` error text."""
    parts: list[str] = []
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        text = str(current) or type(current).__name__
        if not parts or parts[-1] != text:
            parts.append(text)
        current = current.__cause__ or (
            None if current.__suppress_context__ else current.__context__
        )
    return ": ".join(parts)
