"""The session header (log line 1), creation metadata, and the request epoch header.

Records here are immutable trees of JSON values and of each other (`gc=False`): they can
be in no reference cycle, so the cycle collector never traverses them (a thousand live
sessions hold hundreds of thousands)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Literal

import msgspec

from ..llm import AdapterDefaults, Json, LlmCallConfig, ToolSchema, expect
from ._json import freeze_json

__all__ = ["FORMAT_VERSION", "FORMAT_VERSIONS", "EpochHeader", "SessionHeader", "SessionMeta"]

FORMAT_VERSION = 0
"""The log format of the reference runtime 0.1.1 (SPEC §4.2): new sessions by default."""
FORMAT_VERSIONS = frozenset({0, 4})
"""The formats a log may have: 0, and 4 (the reference runtime 0.2.1's), whose lines the
persistence package translates (a `SessionHeader` of either holds this runtime's events)."""

_HEADER_KEYS = (
    "type",
    "version",
    "id",
    "createdAt",
    "cwd",
    "parentSession",
    "seedLength",
    "origin",
    "delegationDepth",
    "agentPreset",
)


class SessionMeta(msgspec.Struct, frozen=True):
    """What a caller may state about a new session; the store completes the header."""

    cwd: str | None = None
    """The project directory; must be absolute."""
    parent_session: str | None = None
    seed_length: int | None = None
    origin: Literal["subagent"] | None = None
    delegation_depth: int = 0
    agent_preset: str | None = None
    created_at: int | None = None
    """Epoch ms; now when omitted."""

    def __post_init__(self) -> None:
        if self.cwd is not None and not os.path.isabs(self.cwd):
            raise ValueError(f"session cwd must be an absolute path, got {self.cwd!r}")
        if self.delegation_depth < 0:
            raise ValueError("delegation_depth must be >= 0")


class SessionHeader(msgspec.Struct, frozen=True, gc=False):
    """The first line of a session log. Unknown keys of a loaded header are kept in `extra`."""

    id: str
    created_at: int
    cwd: str | None = None
    parent_session: str | None = None
    seed_length: int | None = None
    origin: str | None = None
    delegation_depth: int = 0
    agent_preset: str | None = None
    version: int = FORMAT_VERSION
    extra: Mapping[str, Json] = msgspec.field(default_factory=dict)

    @property
    def system_on_surface(self) -> bool:
        """Whether the system prompt is logged as the first surface node (`system/message`,
        replaced when it changes) instead of in `request/header`: format 4."""
        return self.version >= 4

    def to_json(self) -> dict[str, Json]:
        out: dict[str, Json] = {
            "type": "session",
            "version": self.version,
            "id": self.id,
            "createdAt": self.created_at,
        }
        if self.cwd is not None:
            out["cwd"] = self.cwd
        if self.parent_session is not None:
            out["parentSession"] = self.parent_session
        if self.seed_length is not None:
            out["seedLength"] = self.seed_length
        if self.origin is not None:
            out["origin"] = self.origin
        out["delegationDepth"] = self.delegation_depth
        if self.agent_preset is not None:
            out["agentPreset"] = self.agent_preset
        out.update(self.extra)
        return out

    @staticmethod
    def from_json(raw: Mapping[str, Json]) -> SessionHeader:
        """Validate a header line (format 0, or a format-4 header as persistence reads it)."""
        if not isinstance(raw, Mapping) or raw.get("type") != "session":
            raise ValueError("not a session header (expected type 'session')")
        if "version" not in raw:
            raise ValueError("the session header has no version")
        version = raw.get("version")
        if type(version) is not int or version not in FORMAT_VERSIONS:
            readable = " and ".join(str(v) for v in sorted(FORMAT_VERSIONS))
            raise ValueError(
                f"unsupported session format version {version!r} (this runtime reads {readable})"
            )
        values: dict[str, Any] = {
            "id": _get(raw, "id", str),
            "created_at": _get(raw, "createdAt", int),
            "cwd": _get(raw, "cwd", str, optional=True),
            "parent_session": _get(raw, "parentSession", str, optional=True),
            "seed_length": _get(raw, "seedLength", int, optional=True),
            "origin": _get(raw, "origin", str, optional=True),
            "delegation_depth": _get(raw, "delegationDepth", int, optional=True) or 0,
            "agent_preset": _get(raw, "agentPreset", str, optional=True),
            "version": version,
        }
        extra = {k: v for k, v in raw.items() if k not in _HEADER_KEYS}
        return SessionHeader(**values, extra=freeze_json(extra, "header"))


def _get(raw: Mapping[str, Json], key: str, kind: type, *, optional: bool = False) -> Any:
    value = raw.get(key)
    if value is None and optional:
        return None
    if type(value) is not kind:
        raise ValueError(f"session header: {key} must be a {kind.__name__}, got {value!r}")
    return value


_TOOL_JSON: dict[int, tuple[ToolSchema, dict[str, Json]]] = {}
"""The frozen JSON of each tool schema object lately logged, by identity (the schema kept)."""
_TOOL_JSON_LIMIT = 1024


def _tool_json(tool: ToolSchema) -> dict[str, Json]:
    """`tool.to_json()`, frozen, one per schema object: the request headers of the sessions
    offered the same tools (the registry's schema objects) share one copy of each."""
    known = _TOOL_JSON.get(id(tool))
    if known is None or known[0] is not tool:
        if len(_TOOL_JSON) >= _TOOL_JSON_LIMIT:
            _TOOL_JSON.clear()  # schemas made per request (changed by a listener) churn
        known = _TOOL_JSON[id(tool)] = (tool, freeze_json(tool.to_json()))
    return known[1]


class EpochHeader(msgspec.Struct, frozen=True, gc=False):
    """What every request of an epoch shares: routing/sampling, the system prompt, the tools."""

    config: LlmCallConfig
    adapter_defaults: AdapterDefaults = msgspec.field(default_factory=AdapterDefaults)
    system: str | None = None
    tools: tuple[ToolSchema, ...] = ()

    def to_json(self) -> dict[str, Json]:
        """`{config, adapterDefaults?, system?, tools?}`; empty parts are absent."""
        out: dict[str, Json] = {"config": self.config.to_json()}
        defaults = self.adapter_defaults.to_json()
        if defaults:
            out["adapterDefaults"] = defaults
        if self.system:
            out["system"] = self.system
        if self.tools:
            out["tools"] = [_tool_json(t) for t in self.tools]
        return out

    @staticmethod
    def from_json(raw: Mapping[str, Json]) -> EpochHeader:
        config = raw.get("config")
        if not isinstance(config, Mapping):
            raise ValueError("request header: config must be an object")
        system = expect(raw.get("system"), str, optional=True)
        tools = expect(raw.get("tools") or [], list)
        return EpochHeader(
            config=LlmCallConfig.from_json(config),
            adapter_defaults=AdapterDefaults.from_json(
                expect(raw.get("adapterDefaults"), dict, optional=True)
            ),
            system=system or None,
            tools=tuple(ToolSchema.from_json(expect(t, dict)) for t in tools),
        )
