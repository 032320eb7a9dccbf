"""Credentials read from the environment, kept out of reach of the processes dsh starts.

A tool command runs as a child of the dsh process, so it could read dsh's own environment
(`/proc/$PPID/environ`) or inherit it. `read_secret(name)` therefore takes a credential out
of the environment when it first reads it: the value is held here, `os.environ[name]` is set
to `HELD` (so children inherit no credential), the value is wiped from the launch
environment that `/proc/<pid>/environ` keeps showing for the whole life of the process, and
the process is made non-dumpable (Linux), so other processes of the same user cannot read
its memory either. `redact_secrets(text)` masks every held value, for text that leaves the
process (tool results the model and the log see).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys

__all__ = ["HELD", "holds_secrets", "json_holds_secrets", "read_secret", "redact_secrets"]

_log = logging.getLogger("dsh.kernel")

HELD = "(held by dsh)"
"""What a taken credential's variable holds afterwards: set, but no credential."""

MIN_REDACTED = 8
"""Shorter values are not masked in text (they would mask ordinary words)."""

_held: dict[str, str] = {}


def read_secret(name: str) -> str | None:
    """The credential in environment variable `name` (None when unset or empty).

    The first read takes it out of the environment and holds it; later reads return the
    held value while the variable still reads `HELD`. Setting the variable again hands dsh
    a new value (taken the same way); removing it makes dsh forget the old one.
    """
    value = os.environ.get(name)
    if value is None or not value:
        _held.pop(name, None)
        return None
    if value == HELD:
        return _held.get(name)  # None: inherited from a dsh that held it, not a credential
    _held[name] = value
    os.environ[name] = HELD
    if sys.platform.startswith("linux"):
        _wipe_launch_value(name)
        _forbid_inspection()
    return value


def redact_secrets(text: str) -> str:
    """`text` with every held credential replaced by `[redacted NAME]`."""
    for name, value in _held.items():
        if len(value) >= MIN_REDACTED and value in text:
            text = text.replace(value, f"[redacted {name}]")
    return text


def holds_secrets() -> bool:
    """Whether any credential is held (so text may need `redact_secrets`)."""
    return bool(_held)


def json_holds_secrets(text: str) -> bool:
    """Whether JSON `text` (as `json.dumps(..., ensure_ascii=False)` writes it) holds a
    credential `redact_secrets` would mask in one of its strings: a whole JSON value is
    checked in one pass over its text instead of string by string. Escaping is per
    character, so a string holding a value holds it escaped in the text."""
    for value in _held.values():
        if len(value) >= MIN_REDACTED and json.dumps(value, ensure_ascii=False)[1:-1] in text:
            return True
    return False


def _wipe_launch_value(name: str) -> None:
    """Zero `name`'s value in the environment block the process was started with.

    `/proc/<pid>/environ` shows that block (from `env_start` to `env_end` in
    `/proc/<pid>/stat`), and `os.environ` changes never reach it. Best effort: anything
    unexpected leaves the block as it is.
    """
    import ctypes  # only once a credential is held: `import dsh` stays light

    try:
        with open("/proc/self/stat", "rb") as file:
            stat = file.read()
        fields = stat[stat.rindex(b")") + 2 :].split()
        start, end = int(fields[47]), int(fields[48])  # fields 50 and 51 (from state, 3)
        with open("/proc/self/environ", "rb") as file:
            block = file.read()
    except (OSError, ValueError, IndexError):
        return
    if not start or len(block) != end - start:
        return
    prefix = os.fsencode(name) + b"="
    offset = 0
    for entry in block.split(b"\0"):
        if entry.startswith(prefix) and ctypes.string_at(start + offset, len(entry)) == entry:
            ctypes.memset(start + offset + len(prefix), 0, len(entry) - len(prefix))
        offset += len(entry) + 1


def _forbid_inspection() -> None:
    """`prctl(PR_SET_DUMPABLE, 0)`: other processes of this user (a tool command among them)
    can no longer read this process's memory or environment through /proc or ptrace."""
    import ctypes

    pr_set_dumpable = 4
    with contextlib.suppress(OSError, AttributeError):
        if ctypes.CDLL(None, use_errno=True).prctl(pr_set_dumpable, 0, 0, 0, 0) != 0:
            _log.debug("prctl(PR_SET_DUMPABLE, 0) failed: errno %d", ctypes.get_errno())
