"""Running one command hook: JSON on stdin, the workspace as working directory, its own
process group (killed on timeout, on cancel and when its output overflows)."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping
from pathlib import Path

import msgspec

from ...kernel import CancelSignal
from ...llm import Json, json_bytes
from ...tools.builtin import run_process, signal_name

__all__ = ["HookRun", "run_hook"]


class HookRun(msgspec.Struct, frozen=True):
    """What one command did. `exit_code` is None when it did not end by itself; `failure`
    then says why (`timed out after 60 s`, `cancelled`, …)."""

    exit_code: int | None
    stdout: str
    stderr: str
    duration_ms: int
    failure: str | None = None


async def run_hook(
    command: str,
    payload: Mapping[str, Json],
    *,
    workspace: Path,
    signal: CancelSignal,
    timeout_s: float,
    max_bytes: int,
) -> HookRun:
    """Run `command` with `bash -c`; never raises for the command's own failures."""
    started = time.monotonic()
    if signal.aborted:
        return HookRun(None, "", "", 0, "cancelled (not started)")
    env = {**os.environ, "DSH_PROJECT_DIR": str(workspace), "CLAUDE_PROJECT_DIR": str(workspace)}
    try:
        done = await run_process(
            ["bash", "-c", command],
            cwd=str(workspace),
            env=env,
            signal=signal,
            timeout_s=timeout_s,
            max_bytes=max_bytes,
            keep="head",
            stdin=json_bytes(json.dumps(payload, ensure_ascii=False)),
        )
    except OSError as exc:
        return HookRun(None, "", "", _ms(started), f"could not start: {exc}")
    stdout = done.stdout.data.decode("utf-8", "replace")
    stderr = done.stderr.data.decode("utf-8", "replace")
    failure = None
    if done.stopped == "timeout":
        failure = f"timed out after {timeout_s:g} s (killed)"
    elif done.stopped == "aborted":
        failure = "cancelled (killed)"
    elif done.stopped == "overflow":
        failure = f"wrote more than {max_bytes} bytes (killed)"
    elif done.returncode is None or done.returncode < 0:
        failure = f"killed by {signal_name(-(done.returncode or 0))}"
    if failure is not None:
        return HookRun(None, stdout, stderr, _ms(started), failure)
    return HookRun(done.returncode, stdout, stderr, _ms(started))


def _ms(started: float) -> int:
    return int((time.monotonic() - started) * 1000)
