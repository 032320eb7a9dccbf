"""`lazy_pattern`: a module's regular expression compiled at its first use, not at import.

A pattern costs 50-200 µs to compile, and `import dsh` plus a boot import modules whose
patterns only a later step uses (an HTTP response, a session file name, a tool run): a module
keeps such a pattern as `NAME = lazy_pattern(r"...")` and calls `NAME()` where it matches.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import AnyStr

__all__ = ["lazy_pattern"]


def lazy_pattern(pattern: AnyStr, flags: int = 0) -> Callable[[], re.Pattern[AnyStr]]:
    """A function returning `re.compile(pattern, flags)`, compiled at its first call and kept."""
    return functools.cache(lambda: re.compile(pattern, flags))
