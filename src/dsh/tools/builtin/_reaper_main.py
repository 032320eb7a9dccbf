"""The reaper: a tiny process that kills a dsh process's tool commands when that process dies.

Run as `python -I -S _reaper_main.py MARKER` (standard library only, in its own session so a
terminal's signals do not reach it), with a pipe from the dsh process on stdin. Every command
dsh starts carries MARKER (`NAME=token`) in its environment, and so do the processes it
starts in turn. End of input means the dsh process is gone — even a SIGKILL closes the pipe —
and every process still carrying the marker gets SIGKILL (Linux: read from /proc).
"""

import contextlib
import os
import signal
import sys


def carriers(marker: bytes) -> list[int]:
    """The processes whose environment holds `marker` (an exact `NAME=value` entry)."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as file:
                entries = file.read().split(b"\0")
        except OSError:
            continue  # gone, or not ours to read
        if marker in entries:
            found.append(int(name))
    return found


def main() -> None:
    marker = os.fsencode(sys.argv[1])
    while sys.stdin.buffer.read(65536):
        pass  # nothing is sent: only the end of input matters
    for _ in range(3):  # again, for children forked while the first ones were killed
        pids = carriers(marker)
        if not pids:
            return
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


if __name__ == "__main__":
    main()
