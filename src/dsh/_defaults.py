"""The rows of the built-in default profile (grows as services land)."""

from __future__ import annotations

from typing import Any

DEFAULT_ROWS: tuple[dict[str, Any], ...] = ()
