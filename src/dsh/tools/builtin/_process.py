"""Running a child process for a tool: bounded capture, timeout, cooperative cancellation.

The child leads its own process group, so a timeout, a cancel or an output overflow ends the
whole group (SIGTERM, then SIGKILL after a grace period) — grandchildren included. Exit is
detected from the process itself, not from its pipes: a background grandchild that keeps a
pipe open delays the result by at most a short drain, not until it exits. Every child carries
this process's reaper marker in its environment: if this process dies, even by SIGKILL, the
reaper kills whatever still carries it.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import logging
import os
import secrets
import signal as signals
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Literal

import msgspec

from ...kernel import CancelSignal
from .._seams import SpillWriter

__all__ = [
    "OnOutput",
    "ProcessResult",
    "Spill",
    "StopCause",
    "StreamResult",
    "run_process",
    "signal_name",
]

StopCause = Literal["timeout", "aborted", "overflow"]

KILL_GRACE_S = 3.0
"""How long a stopped group gets between SIGTERM and SIGKILL."""
DRAIN_S = 0.25
"""How long to keep reading after the child exited, for pipes a grandchild still holds."""
SPILL_MAX_BYTES = 64 * 1024 * 1024
"""How much of an overflowing stream is copied to its spill file."""

Spill = Callable[[str], "SpillWriter | None"]
"""Opens the spill file of an overflowing stream (`stdout` or `stderr`), or declines."""


_log = logging.getLogger("dsh.tools")

REAPER_ENV = "DSH_REAPER_MARK"
"""The environment variable that marks a command (and what it starts) as this process's."""


class _Reaper:
    """This process's reaper (`_reaper_main.py`): a child process, started before the first
    command, that waits for the pipe from this process to close — it does even on SIGKILL —
    and then kills every process whose environment carries `marker`. Started again if it
    died or this process was forked (a fork gets a marker of its own)."""

    SCRIPT = Path(__file__).with_name("_reaper_main.py")

    def __init__(self) -> None:
        self._process: subprocess.Popen[bytes] | None = None
        self._started_by = 0
        self.marker = ""

    def ensure(self) -> str | None:
        """The marker for a new command's environment (None: no reaper could start)."""
        process = self._process
        if process is not None and process.poll() is None and self._started_by == os.getpid():
            return self.marker
        marker = f"{os.getpid()}-{secrets.token_hex(8)}"
        try:
            self._process = subprocess.Popen(
                [sys.executable, "-I", "-S", str(self.SCRIPT), f"{REAPER_ENV}={marker}"],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                cwd="/",
                # Without an inherited marker: the reaper of a dsh that runs this one must
                # not kill this reaper before it has done its own work.
                env={k: v for k, v in os.environ.items() if k != REAPER_ENV},
                start_new_session=True,  # out of reach of the terminal's Ctrl-C
            )
        except OSError as exc:
            _log.warning("no reaper: commands may outlive a killed dsh (%s)", exc)
            return None
        self._started_by, self.marker = os.getpid(), marker
        return marker


_REAPER = _Reaper()


class StreamResult(msgspec.Struct, frozen=True):
    """One stream: the kept bytes, whether some were dropped, how many it carried, and the
    spill file holding all of them (up to `SPILL_MAX_BYTES`), if one was opened."""

    data: bytes
    truncated: bool
    total: int
    spill: SpillWriter | None


class ProcessResult(msgspec.Struct, frozen=True):
    """What a child left: `returncode` (negative: killed by that signal), why it was stopped
    early (None if it exited by itself), and each stream."""

    returncode: int | None
    stopped: StopCause | None
    stdout: StreamResult
    stderr: StreamResult


def signal_name(number: int) -> str:
    try:
        return signals.Signals(number).name
    except ValueError:
        return f"SIG{number}"


class _Stream:
    """One stream's capture: the last `limit` bytes (tail) or the first (head). A tail
    capture that overflows may also copy the whole stream, up to `SPILL_MAX_BYTES`, to a
    spill file opened on the first overflow (`opener`)."""

    __slots__ = ("buf", "copying", "limit", "opener", "spill", "tail", "total")

    def __init__(self, limit: int, tail: bool, opener: Callable[[], SpillWriter | None]) -> None:
        self.buf = bytearray()
        self.limit = limit
        self.tail = tail
        self.total = 0
        self.opener: Callable[[], SpillWriter | None] | None = opener
        self.spill: SpillWriter | None = None
        self.copying = False

    def feed(self, data: bytes) -> bool:
        """Keep what fits; False once a head capture has overflowed."""
        before = self.total
        self.total += len(data)
        if self.tail:
            if self.total > self.limit and before < SPILL_MAX_BYTES:
                self._copy(data, before)
            self.buf += data
            if len(self.buf) > 2 * self.limit:  # trim in batches, not on every chunk
                del self.buf[: len(self.buf) - self.limit]
            return True
        room = self.limit - len(self.buf)
        if room > 0:
            self.buf += data[:room]
        return self.total <= self.limit

    def _copy(self, data: bytes, start: int) -> None:
        """Copy `data`, which starts at byte `start` of the stream, to the spill file."""
        if self.opener is not None:
            # The first overflow: nothing was trimmed yet, so the buffer holds all before it.
            opener, self.opener = self.opener, None
            self.spill = opener()
            self.copying = self.spill is not None
            data, start = bytes(self.buf) + data, 0
        if not self.copying or self.spill is None:
            return
        try:
            self.spill.write(data[: SPILL_MAX_BYTES - start])
        except OSError as exc:  # e.g. a full disk: the file keeps what it got
            _log.warning("command output no longer saved to %s: %s", self.spill.path, exc)
            self.copying = False

    def result(self) -> tuple[bytes, bool]:
        """The kept bytes and whether any were dropped."""
        data = bytes(self.buf[-self.limit :]) if self.tail else bytes(self.buf)
        truncated = self.total > len(data)
        if self.tail and truncated:
            # Do not start the kept tail inside a UTF-8 sequence.
            skip = 0
            while skip < min(3, len(data)) and data[skip] & 0xC0 == 0x80:
                skip += 1
            data = data[skip:]
        return data, truncated


def _opener(spill: Spill | None, name: str) -> Callable[[], SpillWriter | None]:
    return lambda: spill(name) if spill is not None else None


OnOutput = Callable[[str], None]
"""Told each piece of output as it arrives (stdout and stderr, decoded as UTF-8)."""


class _Capture(asyncio.SubprocessProtocol):
    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        limit: int,
        tail: bool,
        spill: Spill | None,
        on_output: OnOutput | None = None,
    ) -> None:
        self.streams = {
            1: _Stream(limit, tail, _opener(spill, "stdout")),
            2: _Stream(limit, tail, _opener(spill, "stderr")),
        }
        self.on_output = on_output
        self.decoders = {fd: _utf8() for fd in self.streams} if on_output else {}
        self.exited: asyncio.Future[None] = loop.create_future()
        self.closed: asyncio.Future[None] = loop.create_future()
        self.overflow: asyncio.Future[StopCause] = loop.create_future()
        self._open = {1, 2}

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        if not self.streams[fd].feed(data) and not self.overflow.done():
            self.overflow.set_result("overflow")
        if self.on_output is not None:
            self.on_output(self.decoders[fd].decode(data))

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        self._open.discard(fd)
        if not self._open and not self.closed.done():
            self.closed.set_result(None)

    def process_exited(self) -> None:
        if not self.exited.done():
            self.exited.set_result(None)


def _utf8() -> codecs.IncrementalDecoder:
    return codecs.getincrementaldecoder("utf-8")(errors="replace")


def _signal_group(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


async def _stop_group(pid: int, exited: asyncio.Future[None]) -> None:
    _signal_group(pid, signals.SIGTERM)
    try:
        await asyncio.wait_for(asyncio.shield(exited), KILL_GRACE_S)
    except TimeoutError:
        _signal_group(pid, signals.SIGKILL)
        await exited
    # The leader is gone; members that ignored SIGTERM are not.
    _signal_group(pid, signals.SIGKILL)


async def _spawn(
    loop: asyncio.AbstractEventLoop,
    capture: _Capture,
    argv: Sequence[str],
    *,
    cwd: str,
    env: Mapping[str, str] | None,
    stdin: bytes | None = None,
    pass_fds: Sequence[int] = (),
) -> asyncio.SubprocessTransport:
    """Start `argv` in a new process group, marked for the reaper; `stdin` is written to its
    standard input, which is then closed (without it, stdin is /dev/null); `pass_fds` are
    inherited besides the standard streams."""
    child_env = dict(os.environ if env is None else env)
    marker = _REAPER.ensure()
    if marker is not None:
        child_env[REAPER_ENV] = marker
    transport, _ = await loop.subprocess_exec(
        lambda: capture,
        *argv,
        stdin=subprocess.DEVNULL if stdin is None else subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=cwd,
        env=child_env,
        start_new_session=True,
        pass_fds=tuple(pass_fds),
    )
    if stdin is not None:
        pipe = transport.get_pipe_transport(0)
        assert isinstance(pipe, asyncio.WriteTransport)
        pipe.write(stdin)  # buffered: a child that never reads cannot block us
        pipe.close()  # after the buffer is flushed: the child sees end of input
    return transport


async def _until_exit(
    pid: int, capture: _Capture, signal: CancelSignal, timeout_s: float | None
) -> StopCause | None:
    """Wait for the process to exit; stop its group first when the signal fires, the
    timeout passes or a stream overflows (the cause is returned; None: it exited)."""
    aborted: asyncio.Future[StopCause] = asyncio.get_running_loop().create_future()

    def on_abort(_reason: object) -> None:
        if not aborted.done():
            aborted.set_result("aborted")

    remove = signal.add_callback(on_abort)
    try:
        await asyncio.wait(
            (capture.exited, aborted, capture.overflow),
            timeout=timeout_s,
            return_when=asyncio.FIRST_COMPLETED,
        )
        if capture.exited.done():
            return None
        stopped: StopCause = (
            "aborted" if aborted.done() else "overflow" if capture.overflow.done() else "timeout"
        )
        await _stop_group(pid, capture.exited)
        return stopped
    finally:
        remove()
        if not aborted.done():
            aborted.cancel()


async def run_process(
    argv: Sequence[str],
    *,
    cwd: str,
    env: Mapping[str, str] | None,
    signal: CancelSignal,
    timeout_s: float | None,
    max_bytes: int,
    keep: Literal["tail", "head"],
    stdin: bytes | None = None,
    spill: Spill | None = None,
    pass_fds: Sequence[int] = (),
    on_output: OnOutput | None = None,
) -> ProcessResult:
    """Run `argv` to completion or until stopped.

    `keep="tail"` retains the last `max_bytes` of each stream; `keep="head"` retains the
    first and stops the process (cause `overflow`) as soon as a stream exceeds them. The
    signal firing stops it with cause `aborted`; `timeout_s` elapsing with `timeout`.
    `stdin` is written to the child's standard input, which is then closed (without it,
    stdin is /dev/null). With `keep="tail"`, `spill` may open a file for a stream that
    overflows: it then gets the whole stream. `pass_fds` are inherited by the child.
    `on_output` is told the output as it arrives. Spawn failures (`OSError`) propagate.
    """
    loop = asyncio.get_running_loop()
    capture = _Capture(loop, max_bytes, keep == "tail", spill, on_output)
    transport = await _spawn(loop, capture, argv, cwd=cwd, env=env, stdin=stdin, pass_fds=pass_fds)
    pid = transport.get_pid()
    try:
        stopped = await _until_exit(pid, capture, signal, timeout_s)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(capture.closed), DRAIN_S)
    finally:
        if not capture.exited.done():  # our task was cancelled: leave nothing running
            _signal_group(pid, signals.SIGKILL)
        if not capture.overflow.done():
            capture.overflow.cancel()
        transport.close()
    return ProcessResult(
        transport.get_returncode(),
        stopped,
        _result(capture.streams[1]),
        _result(capture.streams[2]),
    )


def _result(stream: _Stream) -> StreamResult:
    data, truncated = stream.result()
    return StreamResult(data, truncated, stream.total, stream.spill)
