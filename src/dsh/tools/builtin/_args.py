"""Reading the model's arguments: the checks the schema cannot state, with the reference's
wording (the schema has already checked types, so these check values)."""

from __future__ import annotations

import math
from collections.abc import Mapping

from ...llm import HarnessError, Json

__all__ = [
    "ArgumentError",
    "always",
    "optional_int",
    "optional_text",
    "required_text",
    "schema",
]


class ArgumentError(HarnessError):
    """An argument has the right type but a value the tool refuses (code `INVALID_ARGS`)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, "INVALID_ARGS")


def always(args: object) -> bool:
    """The concurrency classifier of a tool that is always safe to overlap."""
    return True


def schema(properties: Mapping[str, Json], required: tuple[str, ...]) -> dict[str, Json]:
    """An object parameter schema (the root stays open, as in the reference)."""
    return {"type": "object", "properties": dict(properties), "required": list(required)}


def required_text(args: Mapping[str, Json], key: str, message: str) -> str:
    """A string that is not blank."""
    value = args.get(key)
    if not isinstance(value, str) or not value.strip():
        raise ArgumentError(message)
    return value


def optional_text(args: Mapping[str, Json], key: str, message: str) -> str | None:
    """None when absent; else a string that is not blank."""
    if args.get(key) is None:
        return None
    return required_text(args, key, message)


def optional_int(args: Mapping[str, Json], key: str, message: str) -> int | None:
    """None when absent; else a positive integer (an integral float like 5.0 counts)."""
    value = args.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ArgumentError(message)
    if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
        raise ArgumentError(message)
    if value <= 0:
        raise ArgumentError(message)
    return int(value)
