"""dsh: an agent harness in which everything is a plugin."""

from ._version import __version__
from .kernel import (
    Aborted,
    CancelSignal,
    Context,
    EventSpec,
    Mode,
    ServiceKey,
    boot,
    load_profile,
)

__all__ = [
    "Aborted",
    "CancelSignal",
    "Context",
    "EventSpec",
    "Mode",
    "ServiceKey",
    "__version__",
    "boot",
    "load_profile",
]
