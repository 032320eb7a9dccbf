"""The plugin kernel: contexts, owners and effects, typed events, scopes, plugins, composition."""

from ._compose import (
    ENTRY_POINT_GROUP,
    CompositionError,
    PluginRow,
    Profile,
    boot,
    interpolate,
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
from ._owner import Disposer, InactiveOwnerError, Owner
from ._plugin import Fiber, FiberState, PluginError
from ._scope import (
    DuplicateEntryError,
    Scope,
    ScopedLayers,
    bind_scope_parent,
    create_scope,
    scope_chain,
)
from ._signal import Aborted, CancelSignal

__all__ = [
    "AGENTS",
    "AGENT_LOOP",
    "LLM",
    "SESSIONS",
    "SYSTEM_PROMPT",
    "TOOLS",
    "ENTRY_POINT_GROUP",
    "Aborted",
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
    "interpolate",
    "load_profile",
    "resolve_plugin",
    "scope_chain",
]
