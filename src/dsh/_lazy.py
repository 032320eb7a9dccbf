"""Names a plugin package exports but its plugin does not need to start: loaded from their
private module on first use, so booting a profile imports only what its plugins run."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Mapping
from typing import Any


def lazy_attribute(package: str, name: str, modules: Mapping[str, str]) -> Any:
    """The module `__getattr__` of `package`: `name` imported from `modules[name]` (a module
    of the package, e.g. `"._codec"`), then kept in the package for the next lookup."""
    module = modules.get(name)
    if module is None:
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, package), name)
    setattr(sys.modules[package], name, value)
    return value
