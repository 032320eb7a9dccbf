"""The runtime fixture of the persistence tests."""

from ...persistence.conftest import runtimes

__all__ = ["runtimes"]
