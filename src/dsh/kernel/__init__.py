"""The plugin kernel: contexts, owners and effects, typed events, scopes, plugins, composition."""

from ._compose import (
    ENTRY_POINT_GROUP,
    CompositionError,
    PluginRow,
    Profile,
    boot,
    load_profile,
    resolve_plugin,
)
from ._context import (
    AGENT_LOOP,
    AGENTS,
    LLM,
    SESSIONS,
    SYSTEM_PROMPT,
    TOOLS,
    Context,
    ServiceKey,
    ServiceUnavailableError,
)
from ._events import EventBus, EventSpec, Mode, Next, WaterfallError, declared_events
from ._owner import Acquire, Disposer, InactiveOwnerError, Owner
from ._plugin import Fiber, FiberState, PluginError
from ._publication import Publication
from ._scope import (
    DuplicateEntryError,
    Scope,
    ScopedLayers,
    bind_scope_parent,
    create_scope,
    scope_chain,
)
from ._secrets import HELD, holds_secrets, read_secret, redact_secrets
from ._signal import Aborted, CancelSignal

__all__ = [
    "AGENTS",
    "AGENT_LOOP",
    "LLM",
    "SESSIONS",
    "SYSTEM_PROMPT",
    "TOOLS",
    "ENTRY_POINT_GROUP",
    "HELD",
    "Aborted",
    "Acquire",
    "CancelSignal",
    "CompositionError",
    "Context",
    "Disposer",
    "DuplicateEntryError",
    "EventBus",
    "EventSpec",
    "Fiber",
    "FiberState",
    "InactiveOwnerError",
    "Mode",
    "Next",
    "Owner",
    "PluginError",
    "PluginRow",
    "Publication",
    "Profile",
    "Scope",
    "ScopedLayers",
    "ServiceKey",
    "ServiceUnavailableError",
    "WaterfallError",
    "bind_scope_parent",
    "boot",
    "create_scope",
    "declared_events",
    "holds_secrets",
    "load_profile",
    "read_secret",
    "redact_secrets",
    "resolve_plugin",
    "scope_chain",
]
