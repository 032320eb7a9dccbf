"""The plugin kernel: contexts, owners and effects, typed events, scopes, plugins."""

from ._config import ConfigError, ConfigRecord, convert, format_loc, load_config
from ._context import Context, Scope, create_scope
from ._events import (
    EmitListener,
    EmitSpec,
    EventBus,
    EventSpec,
    Mode,
    Next,
    ParallelSpec,
    SerialListener,
    SerialSpec,
    WaterfallError,
    WaterfallListener,
    WaterfallSpec,
    declared_events,
)
from ._keys import Injects, ServiceKey, ServiceUnavailableError
from ._owner import Acquire, Disposer, InactiveOwnerError, Owner
from ._plugin import Fiber, FiberState, PluginError, PluginParent, validate_config
from ._publication import Publication
from ._scope import DuplicateEntryError, ScopedLayers, bind_scope_parent, scope_chain
from ._secrets import HELD, holds_secrets, json_holds_secrets, read_secret, redact_secrets
from ._signal import Aborted, CancelSignal
from ._trace import TraceContext, current_trace, using_trace

__all__ = [
    "Injects",
    "HELD",
    "Aborted",
    "Acquire",
    "CancelSignal",
    "ConfigError",
    "ConfigRecord",
    "Context",
    "Disposer",
    "DuplicateEntryError",
    "EmitListener",
    "EmitSpec",
    "EventBus",
    "EventSpec",
    "Fiber",
    "FiberState",
    "InactiveOwnerError",
    "Mode",
    "Next",
    "Owner",
    "ParallelSpec",
    "PluginError",
    "PluginParent",
    "Publication",
    "Scope",
    "ScopedLayers",
    "SerialListener",
    "SerialSpec",
    "ServiceKey",
    "ServiceUnavailableError",
    "TraceContext",
    "WaterfallError",
    "WaterfallListener",
    "WaterfallSpec",
    "bind_scope_parent",
    "create_scope",
    "current_trace",
    "declared_events",
    "holds_secrets",
    "json_holds_secrets",
    "convert",
    "format_loc",
    "load_config",
    "read_secret",
    "redact_secrets",
    "scope_chain",
    "using_trace",
    "validate_config",
]
