"""Service keys: the typed names services are provided and looked up by."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Generic, TypeVar

__all__ = ["Injects", "ServiceKey", "ServiceUnavailableError"]

T_co = TypeVar("T_co", covariant=True)


class ServiceKey(Generic[T_co]):
    """A typed name for a service: `ctx.get(KEY)` is typed `T | None`. Covariant: any key
    is a `ServiceKey[object]` (a plugin's `inject` list holds keys of several types)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"ServiceKey({self.name!r})"


class ServiceUnavailableError(LookupError):
    """A required service is not provided in this context."""


Injects = Sequence[ServiceKey[object] | str]
"""A plugin's `inject`: the services it needs before `apply` (keys, or names)."""
