"""What a fetch may do: the hosts the profile allows and the limits (no heavy imports: the
plugin loads this at start, httpx only on the first fetch)."""

from __future__ import annotations

from collections.abc import Iterable

from ..._record import record

__all__ = ["HostRules", "Limits"]


class HostRules:
    """The hosts the profile allows whatever their addresses: `host` or `host:port`."""

    def __init__(self, allowed: Iterable[str]) -> None:
        self._allowed = {entry.lower().strip("[]") for entry in allowed}

    def allows(self, host: str, port: int) -> bool:
        host = host.lower().strip("[]")
        return host in self._allowed or f"{host}:{port}" in self._allowed


@record
class Limits:
    timeout_s: float
    max_redirects: int
    max_bytes: int
    max_chars: int
    user_agent: str
