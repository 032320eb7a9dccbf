"""The sandbox side of `sandbox.network.allow_hosts`: run as
`python -I -S _bridge.py CONTROL_FD -- ARGV...` inside bubblewrap, it listens on the
sandbox's private loopback, points the proxy variables of ARGV's environment at it, and
hands every connection it accepts to dsh's `AllowListProxy` over CONTROL_FD (a socketpair
end dsh passed in) with SCM_RIGHTS: the sandbox may not create AF_UNIX sockets and has no
network of its own, so this is its one way out.

The command (ARGV) replaces this process; a forked child is the bridge. It is not dumpable
(the command cannot ptrace it or open its file descriptors) and dies with the command. When
CONTROL_FD is unusable the command runs all the same, without network.

Standalone: the standard library only, nothing of dsh (it runs with `-I -S`).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import socket
import sys
from collections.abc import Sequence

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy")
NO_PROXY = "localhost,127.0.0.1,::1"
USAGE = "usage: _bridge.py CONTROL_FD -- ARGV..."


def main(args: Sequence[str]) -> None:
    if len(args) < 3 or args[1] != "--" or not args[0].isdigit():
        sys.exit(USAGE)
    command = list(args[2:])
    control = _control(int(args[0]))
    if control is not None:
        _start_bridge(control)
    try:
        os.execvp(command[0], command)
    except OSError as exc:
        print(f"{command[0]}: {exc.strerror}", file=sys.stderr)
        sys.exit(127 if isinstance(exc, FileNotFoundError) else 126)


def _control(fd: int) -> socket.socket | None:
    """CONTROL_FD as a socket, None (and the fd closed) when it is not a unix socket."""
    try:
        control = socket.socket(fileno=fd)
    except OSError:
        _close_fd(fd)
        return None
    if control.family != socket.AF_UNIX:
        control.close()
        return None
    control.set_inheritable(False)
    return control


def _start_bridge(control: socket.socket) -> None:
    """Fork the bridge; here (the command's side) set the environment and close both ends."""
    try:
        listener = socket.create_server(("127.0.0.1", 0), backlog=64)
    except OSError:
        control.close()
        return
    with control, listener:
        command_pid = os.getpid()
        try:
            child = os.fork()
        except OSError:
            return
        if child == 0:
            try:
                _bridge(control, listener, command_pid)
            finally:
                os._exit(0)
        proxy = f"http://127.0.0.1:{listener.getsockname()[1]}"
    for name in PROXY_VARIABLES:
        os.environ[name] = proxy
    os.environ["NO_PROXY"] = os.environ["no_proxy"] = NO_PROXY


def _bridge(control: socket.socket, listener: socket.socket, command_pid: int) -> None:
    if not _protect(command_pid):
        return
    _close_fd(0)
    _close_fd(1)
    while True:
        try:
            client, _ = listener.accept()
        except ConnectionAbortedError:
            continue
        try:
            socket.send_fds(control, [b"\0"], [client.fileno()])
        except OSError:
            return  # dsh is gone
        finally:
            client.close()


def _protect(command_pid: int) -> bool:
    """Not dumpable, killed with the command; False when that cannot be had."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        for option, value in ((PR_SET_DUMPABLE, 0), (PR_SET_PDEATHSIG, signal.SIGKILL)):
            zero = ctypes.c_ulong(0)
            if libc.prctl(option, ctypes.c_ulong(value), zero, zero, zero) != 0:
                return False
    except (OSError, AttributeError):
        return False
    return os.getppid() == command_pid  # else the command already ended


def _close_fd(fd: int) -> None:
    with contextlib.suppress(OSError):
        os.close(fd)


if __name__ == "__main__":
    main(sys.argv[1:])
