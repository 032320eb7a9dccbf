"""The seccomp filter every sandboxed command runs under, built with libseccomp (through
`pyseccomp`, loaded on the first sandboxed command) and handed to bubblewrap as a file
descriptor (`--seccomp FD`).

It refuses, with EPERM:
- `socket(AF_UNIX, …)`: a named Unix socket outside the sandbox (docker.sock, PostgreSQL's,
  D-Bus, an ssh-agent) is reachable through any read-only bind, and the network namespace does
  not cover it. `socketpair(AF_UNIX, SOCK_STREAM)` stays allowed: asyncio, multiprocessing and
  shells use it, and a connected pair cannot reach anything else;
- `socketpair(AF_UNIX, SOCK_DGRAM)`: a datagram socket may `sendto` any named socket
  (journald, `/dev/log`);
- `io_uring_*`: io_uring creates sockets without the `socket` system call.
System calls of another architecture (32-bit programs on x86-64) end the process: their
socket calls go through `socketcall`, whose arguments a filter cannot read.
"""

from __future__ import annotations

import errno
import os
import socket

__all__ = ["SeccompUnavailable", "filter_fd"]

_IO_URING = ("io_uring_setup", "io_uring_enter", "io_uring_register")
_SOCK_TYPE_MASK = 0xF  # the type without SOCK_NONBLOCK / SOCK_CLOEXEC

_program: int | None = None  # a memfd holding the compiled filter, made once per process


class SeccompUnavailable(Exception):
    """libseccomp (or its Python binding) cannot build the filter here; the message says why."""


def filter_fd() -> int:
    """A new read-only file descriptor of the compiled filter, positioned at its start (bubblewrap
    reads it to the end, so each command needs its own); the caller closes it."""
    global _program
    if _program is None:
        _program = _compile()
    return os.open(f"/proc/self/fd/{_program}", os.O_RDONLY | os.O_CLOEXEC)


def _compile() -> int:
    try:
        import pyseccomp as seccomp  # type: ignore[import-untyped]
    except (ImportError, OSError, RuntimeError) as exc:  # RuntimeError: no libseccomp.so.2
        why = f"libseccomp is not available ({exc}): install libseccomp2"
        raise SeccompUnavailable(why) from exc
    refuse = seccomp.ERRNO(errno.EPERM)
    rules = seccomp.SyscallFilter(defaction=seccomp.ALLOW)
    rules.add_rule(refuse, "socket", seccomp.Arg(0, seccomp.EQ, socket.AF_UNIX))
    rules.add_rule(
        refuse,
        "socketpair",
        seccomp.Arg(0, seccomp.EQ, socket.AF_UNIX),
        seccomp.Arg(1, seccomp.MASKED_EQ, _SOCK_TYPE_MASK, socket.SOCK_DGRAM),
    )
    for name in _IO_URING:
        rules.add_rule(refuse, name)
    fd = os.memfd_create("dsh-sandbox-seccomp", os.MFD_CLOEXEC)
    with os.fdopen(os.dup(fd), "wb") as out:
        rules.export_bpf(out)
    return fd
