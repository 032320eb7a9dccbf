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
import re
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


def extra_hint(extra: str) -> str:
    """How to add the optional `extra`: its packages, for pip or a pipx install (dsh is not
    installed from PyPI by name: another project holds the name `dsh` there)."""
    from importlib import metadata

    try:
        requirements = metadata.requires("dsh") or []
    except metadata.PackageNotFoundError:
        requirements = []
    marker = re.compile(rf"""extra\s*==\s*['"]{re.escape(extra)}['"]""")
    packages = [r.split(";")[0].strip() for r in requirements if marker.search(r)]
    if not packages:
        return f"install dsh with its {extra} extra (pip install '.[{extra}]' in its folder)"
    listed = " ".join(f"'{p}'" for p in packages)
    return f"pip install {listed} (pipx: pipx inject dsh {listed})"
