"""The ripgrep backend of `glob` and `grep`: the reference's command lines, parsed output."""

from __future__ import annotations

import base64
import json
import os
import re

from ...kernel import CancelSignal
from ...llm import HarnessError
from ._process import run_process
from ._walk import VCS_DIRS, Match
from ._workspace import display_path, path_text

__all__ = ["SearchError", "rg_glob", "rg_grep"]

RAW_OUTPUT_LIMIT = 20_000_000
# How ripgrep reports a path it could not read and skipped ("./x: Permission denied (os
# error 13)"); it then exits 2 although it printed everything else it found.
_SKIPPED_PATH = re.compile(r".*\(os error \d+\)")


class SearchError(HarnessError):
    """A search failed; `code` is one of the reference's `SEARCH_*` codes."""


def aborted(tool: str) -> SearchError:
    return SearchError(
        f"{tool} was aborted before completion (tool timeout or caller cancellation)",
        "SEARCH_ABORTED",
    )


def overflow(tool: str) -> SearchError:
    return SearchError(
        f"{tool} produced more than {RAW_OUTPUT_LIMIT:,} bytes of raw output; "
        "narrow the pattern, path or include",
        "SEARCH_RAW_OUTPUT_OVERFLOW",
    )


async def _run(tool: str, argv: list[str], cwd: str, signal: CancelSignal) -> str | None:
    """rg's stdout, or None when it found nothing (exit 1, or exit 2 with only skipped
    unreadable paths and no output)."""
    try:
        done = await run_process(
            argv,
            cwd=cwd,
            env=None,
            signal=signal,
            timeout_s=None,
            max_bytes=RAW_OUTPUT_LIMIT,
            keep="head",
        )
    except OSError as exc:
        raise SearchError(f"{tool} search failed (exit -1): {exc}", "SEARCH_FAILED") from exc
    if done.stopped == "aborted":
        raise aborted(tool)
    if done.stopped == "overflow":
        raise overflow(tool)
    stderr = done.stderr.data.decode("utf-8", "replace").strip()
    if done.returncode == 1:
        return None
    if done.returncode == 2 and "regex parse error" in stderr:
        raise SearchError(f"{tool} pattern rejected by ripgrep: {stderr}", "SEARCH_INVALID_PATTERN")
    skipped = stderr and all(_SKIPPED_PATH.fullmatch(e) for e in stderr.splitlines())
    if done.returncode == 2 and skipped:
        # Unreadable paths are skipped, as the Python walk skips them: keep the results.
        return done.stdout.data.decode("utf-8", "surrogateescape") or None
    if done.returncode != 0:
        raise SearchError(
            f"{tool} search failed (exit {done.returncode}): {stderr}", "SEARCH_FAILED"
        )
    return done.stdout.data.decode("utf-8", "surrogateescape")


def _shown(printed: str, cwd: str) -> str:
    return path_text(display_path(os.path.normpath(os.path.join(cwd, printed)), cwd))


async def rg_glob(rg: str, root: str, cwd: str, pattern: str, signal: CancelSignal) -> list[str]:
    """`rg --files --glob=<pattern> --sort=modified --no-ignore --hidden` + VCS excludes."""
    argv = [rg, "--no-config", "--files", f"--glob={pattern}", "--sort=modified"]
    argv += ["--no-ignore", "--hidden"]
    for name in VCS_DIRS:
        argv += [f"--glob=!**/{name}", f"--glob=!**/{name}/**"]
    argv += ["--", display_path(root, cwd)]
    out = await _run("glob", argv, cwd, signal)
    return [] if out is None else [_shown(line, cwd) for line in out.splitlines() if line]


def _text(field: object) -> str | None:
    if not isinstance(field, dict):
        return None
    if isinstance(field.get("text"), str):
        return str(field["text"])
    return None


async def rg_grep(
    rg: str, root: str, cwd: str, pattern: str, include: str | None, signal: CancelSignal
) -> list[Match]:
    """`rg --json --regexp=<pattern> [--glob=<include>] -- <root>`, match events only."""
    argv = [rg, "--no-config", "--json", f"--regexp={pattern}"]
    if include is not None:
        argv.append(f"--glob={include}")
    argv += ["--", display_path(root, cwd)]
    out = await _run("grep", argv, cwd, signal)
    matches: list[Match] = []
    for row in (out or "").splitlines():
        event = json.loads(row)
        if event.get("type") != "match":
            continue
        data = event["data"]
        path = _text(data["path"])
        if path is None:  # a non-UTF-8 file name
            raw = base64.b64decode(data["path"]["bytes"])
            path = raw.decode("utf-8", "replace")
        line = _text(data["lines"])
        if line is not None:
            line = line.removesuffix("\n").removesuffix("\r")
        matches.append(Match(_shown(path, cwd), int(data["line_number"]), line))
    return matches
