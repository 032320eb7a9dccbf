"""What dsh's own processes (the `dsh` command, `dsh-jsonrpc-agent`) set up before they
import anything heavy. A program that imports dsh as a library is left as it is."""

from __future__ import annotations

import gc
import sys

__all__ = [
    "YOUNG_COLLECTION",
    "lighten_imports",
    "pause_collector",
    "resume_collector",
    "settle_collector",
]

_paused = False

YOUNG_COLLECTION = 3000
"""Allocations (net of frees) between two collections of the youngest generation, in dsh's
own processes once booted (Python's default: 700). A live session holds a few hundred
tracked objects and allocates thousands per step, so at the default the collector runs
several times per step and each pass promotes more of the sessions' objects to the older
generations, to be traversed again there. At 3000, `dsh web` with 300 sessions
(`bench/sessions.py`) walked 1.1 M objects in collections instead of 2.1 M, and ran one
full collection instead of four; a young collection stays a few milliseconds."""


def lighten_imports() -> None:
    """Keep httpx's command-line client out of this process: `import httpx` imports it
    (click, rich's progress and syntax, pygments: a fifth of `dsh run`'s start-up) whenever
    those are installed, which they are beside typer; dsh never runs it. httpx then falls
    back to a stub `httpx.main`."""
    if "httpx" not in sys.modules:
        sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]


def pause_collector() -> None:
    """Turn the cyclic garbage collector off while the process imports and boots: those
    build long-lived objects by the hundred thousand, and each collection on the way
    traverses them again (3% of `dsh run` N=1). `settle_collector` after boot, or
    `resume_collector` for a command that boots nothing, turns it back on."""
    global _paused
    if gc.isenabled():
        gc.disable()
        _paused = True


def resume_collector() -> None:
    """Turn the collector back on if `pause_collector` turned it off."""
    global _paused
    if _paused:
        _paused = False
        gc.enable()


def settle_collector() -> None:
    """After boot, if `pause_collector` paused the collector: collect once what imports and
    boot left over, then move what lives on out of the collector's generations
    (`gc.freeze`): it lasts as long as the process, and full collections no longer traverse
    it, and collect the youngest generation less often (`YOUNG_COLLECTION`). Otherwise (dsh
    used as a library) nothing: the process is not ours to tune."""
    if not _paused:
        return
    gc.collect()
    gc.freeze()
    gc.set_threshold(YOUNG_COLLECTION, *gc.get_threshold()[1:])
    resume_collector()
