"""The one way dsh loads a name on first use: at an optional extra's boundary (OpenTelemetry,
MCP, PostgreSQL), and for `dsh`'s own names (so that `import dsh.client` loads no core).
Inside the core, imports are plain."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Mapping
from typing import Any


def lazy_attribute(package: str, name: str, modules: Mapping[str, str]) -> Any:
    """The module `__getattr__` of `package`: `name` imported from `modules[name]` (a module
    of the package, e.g. `"._telemetry"`, or an absolute name), then kept in the package for
    the next lookup."""
    module = modules.get(name)
    if module is None:
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, package), name)
    setattr(sys.modules[package], name, value)
    return value
