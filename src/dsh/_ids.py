"""Ids: random ones — a version-4 UUID's text without the `uuid` module, unguessable from the
system's source (`uuid4_text`, `uuid4_hex`: sessions, files) or merely unique from `random`
(`common_uuid4_text`: messages) — and the rule for the session ids a client may choose
(`client_session_id`).

`uuid` imports `platform` (and its regular expressions) on Python 3.11: 2% of a boot that
creates no id at all. The same 122 random bits, the same version and variant bits, the
same text as `str(uuid.uuid4())` and `uuid.uuid4().hex`.
"""

from __future__ import annotations

import os
import random
import re

__all__ = ["CLIENT_SESSION_ID", "client_session_id", "common_uuid4_text", "uuid4_hex", "uuid4_text"]

_CLIENT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}")
CLIENT_SESSION_ID = "letters, digits, . _ : - (at most 128, starting with a letter or digit)"
"""What `client_session_id` accepts, for a client's error message."""


def client_session_id(text: str) -> bool:
    """Whether a client may name a session `text` (an A2A contextId, an AG-UI threadId): a
    safe file name and log field in every store."""
    return _CLIENT_ID.fullmatch(text) is not None


def uuid4_hex() -> str:
    """32 hex digits, as `uuid.uuid4().hex`."""
    raw = bytearray(os.urandom(16))
    raw[6] = raw[6] & 0x0F | 0x40  # version 4
    raw[8] = raw[8] & 0x3F | 0x80  # the RFC 4122 variant
    return raw.hex()


def uuid4_text() -> str:
    """`xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx`, as `str(uuid.uuid4())`."""
    h = uuid4_hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


_VERSION_4 = (0x4 << 76) | (0x2 << 62)
_KEEP = ~((0xF << 76) | (0x3 << 62)) & ((1 << 128) - 1)


def common_uuid4_text() -> str:
    """The same form from `random` (seeded from the system's source, again in a forked
    child): unique, not unguessable. For ids made at every step that nothing relies on being
    secret (messages): no system call each (under a busy process's other threads, a system
    call costs a wait for the interpreter lock)."""
    h = f"{random.getrandbits(128) & _KEEP | _VERSION_4:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
