"""Where dsh loads code on first use, and how. Inside the core, imports are plain (a cycle is
fixed, not hidden in a function). Laziness is kept where it keeps an optional extra, or a
heavy module few processes need, off every process:
- a function imports such a module where it first needs it: the extras (psycopg, the mcp
  SDK, OpenTelemetry, Ray, zstandard, markdownify, pydantic for a hint only it takes), and
  PyYAML (profile and skill files), package metadata (third-party plugin names), httpx (the
  TLS trust roots, at the first `https:` connection), libseccomp (the first sandboxed
  command), ctypes (secrets' process hardening);
- a package that exports a name from such a module loads it with `lazy_attribute` (`dsh`
  itself too, so that `import dsh.client` loads no core).
"""

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
