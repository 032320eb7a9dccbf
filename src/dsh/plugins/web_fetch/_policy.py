"""What a fetch may do: the hosts the profile allows and the limits (no heavy imports: the
plugin loads this at start, httpx only on the first fetch)."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

import msgspec

__all__ = ["HostRules", "Limits", "public"]


def public(address: str) -> bool:
    """Whether `address` (an IP, an IPv6 zone allowed) is global and not multicast."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])  # drop an IPv6 zone
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_global and not ip.is_multicast


class HostRules:
    """The hosts the profile allows whatever their addresses: `host` or `host:port`."""

    def __init__(self, allowed: Iterable[str]) -> None:
        self._allowed = {entry.lower().strip("[]") for entry in allowed}

    def allows(self, host: str, port: int) -> bool:
        host = host.lower().strip("[]")
        return host in self._allowed or f"{host}:{port}" in self._allowed


class Limits(msgspec.Struct, frozen=True):
    timeout_s: float
    max_redirects: int
    max_bytes: int
    max_chars: int
    user_agent: str
