"""What dsh's own processes (the `dsh` command, `dsh-jsonrpc-agent`) set up before they
import anything heavy. A program that imports dsh as a library is left as it is."""

from __future__ import annotations

import sys

__all__ = ["lighten_imports"]


def lighten_imports() -> None:
    """Keep httpx's command-line client out of this process: `import httpx` imports it
    (click, rich's progress and syntax, pygments: a fifth of `dsh run`'s start-up) whenever
    those are installed, which they are beside typer; dsh never runs it. httpx then falls
    back to a stub `httpx.main`."""
    if "httpx" not in sys.modules:
        sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]
