"""Service keys: the typed names services are provided and looked up by."""

from __future__ import annotations

from typing import Generic, TypeVar

__all__ = ["ServiceKey", "ServiceUnavailableError"]

T = TypeVar("T")


class ServiceKey(Generic[T]):
    """A typed name for a service: `ctx.get(KEY)` is typed `T | None`."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"ServiceKey({self.name!r})"


class ServiceUnavailableError(LookupError):
    """A required service is not provided in this context."""
