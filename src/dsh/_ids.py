"""Ids: random ones — a version-4 UUID's text without the `uuid` module — and the rule for
the session ids a client may choose (`client_session_id`).

`uuid` imports `platform` (and its regular expressions) on Python 3.11: 2% of a boot that
creates no id at all. The same 122 random bits, the same version and variant bits, the
same text as `str(uuid.uuid4())` and `uuid.uuid4().hex`.
"""

from __future__ import annotations

import os
import re

__all__ = ["CLIENT_SESSION_ID", "client_session_id", "uuid4_hex", "uuid4_text"]

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
