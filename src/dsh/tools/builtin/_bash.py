"""`bash`: one command in a fresh `bash -c`, in the session cwd, with the reference's markers."""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Mapping
from typing import Annotated

from pydantic import Field

from ...kernel import Aborted
from ...llm import HarnessError, Json
from .._tool_plugin import ToolPlugin
from .._types import ToolDefinition, ToolRunContext, compact_json
from ._args import ArgumentError, optional_text, required_text, schema
from ._process import run_process, signal_name
from ._workspace import ResolvedPath, Workspace, WorkspaceConfig

__all__ = ["BashConfig", "BashToolPlugin", "bash_tool", "render_bash"]

GUIDANCE = """\
## bash
- Each bash call starts a fresh shell in the working directory: `cd` and variables do not \
carry over to the next call; use the `workdir` argument instead of `cd`.
- A failed command ends its result with `[exit code: N]` (no marker means exit 0), \
`[timed out after Nms]` or `[killed by signal: SIG…]`. Check for these on every result and \
look into failures before moving on.
- Prefer the dedicated tools for files and search (read, write, edit, glob, grep) over \
cat, sed, find or grep in the shell."""

DESCRIPTION = """\
Run a shell command with `bash -c` in a fresh non-login shell and return its output.

The command runs in the session's working directory (or `workdir`, which must stay inside \
the workspace); no state persists between calls. stdin is closed. The result is stdout, then \
stderr under a `[stderr]` line, then status markers: `[exit code: N]` for a non-zero exit, \
`[timed out after Nms]`, `[killed by signal: SIG…]`. A non-zero exit is a normal result, not \
an error. Only the last {max_bytes} bytes of each stream are kept \
(`[output truncated; …]` says so). The command is stopped after `timeoutMs` \
(default {default_ms}, at most {max_ms}); a timeout or a cancellation kills its whole \
process group, so do not start servers or watchers that must outlive the call."""

_ENV_DEFAULTS = {"NO_COLOR": "1", "TERM": "dumb", "PAGER": "cat", "GIT_PAGER": "cat"}


class BashConfig(WorkspaceConfig):
    """Config of the `bash` tool."""

    timeout_ms: Annotated[int, Field(gt=0)] = 60_000
    """The timeout when the model gives none."""
    max_timeout_ms: Annotated[int, Field(gt=0)] = 600_000
    """The cap on any timeout the model asks for."""
    max_output_bytes: Annotated[int, Field(gt=0)] = 64_000
    """Bytes kept of each stream (the tail)."""
    shell: str = "bash"
    scrub_env: tuple[str, ...] = ("DEEPSEEK_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY")
    """Variables removed from the command's environment (besides every inherited `DSH_*`)."""


def _timeout(args: Mapping[str, Json], config: BashConfig) -> float:
    raw = args.get("timeoutMs")
    if raw is None:
        return min(config.timeout_ms, config.max_timeout_ms)
    if (
        isinstance(raw, bool)
        or not isinstance(raw, int | float)
        or not math.isfinite(raw)
        or raw <= 0
    ):
        raise ArgumentError(
            f"invalid timeoutMs: expected a positive number, got {compact_json(raw)}"
        )
    return min(float(raw), float(config.max_timeout_ms))


def _number(value: float) -> int | float:
    return int(value) if float(value).is_integer() else value


def _environment(config: BashConfig, run: ToolRunContext, cwd: str) -> dict[str, str]:
    scrub = set(config.scrub_env)
    env = {k: v for k, v in os.environ.items() if not k.startswith("DSH_") and k not in scrub}
    env.update(_ENV_DEFAULTS)
    env["DSH_SHELL"] = "1"
    env["PWD"] = cwd  # so `pwd` prints the session's spelling of the directory
    if "DSH_HOME" in os.environ:
        env["DSH_HOME"] = os.environ["DSH_HOME"]
    session = run.session
    if session is not None:
        env["DSH_SESSION_ID"] = session.id
    return env


def _workdir(where: ResolvedPath) -> ResolvedPath:
    if not os.path.isdir(where.real):
        raise ArgumentError(f'invalid workdir: "{where.display}" is not a directory')
    return where


def bash_tool(config: BashConfig | None = None) -> ToolDefinition:
    """The `bash` tool definition."""
    config = config or BashConfig()
    return ToolDefinition(
        "bash",
        DESCRIPTION.format(
            max_bytes=f"{config.max_output_bytes:,}",
            default_ms=f"{config.timeout_ms:,} ms",
            max_ms=f"{config.max_timeout_ms:,} ms",
        ),
        _parameters(config),
        functools.partial(run_bash, config, config.workspace()),
        render=render_bash,
    )


def _parameters(config: BashConfig) -> dict[str, Json]:
    return schema(
        {
            "command": {"type": "string", "description": "The command for `bash -c`."},
            "description": {
                "type": "string",
                "description": "What the command does, in 5-10 words (shown to the user).",
            },
            "timeoutMs": {
                "type": "number",
                "description": f"Timeout in milliseconds (default {config.timeout_ms}, "
                f"max {config.max_timeout_ms}).",
            },
            "workdir": {
                "type": "string",
                "description": "Directory to run in, relative to the working directory.",
            },
        },
        ("command", "description"),
    )


async def run_bash(
    config: BashConfig, workspace: Workspace, args: Mapping[str, Json], run: ToolRunContext
) -> Json:
    """The body of `bash`: check the arguments, run the command, report how it ended."""
    command = required_text(args, "command", "invalid command: expected a non-empty string")
    required_text(args, "description", "invalid description: expected a non-empty string")
    timeout_ms = _timeout(args, config)
    if args.get("run_in_background") is True:
        raise ArgumentError(
            "run_in_background is disabled for this deployment (enableRunInBackground: false)"
        )
    workdir = optional_text(args, "workdir", "invalid workdir: expected a non-empty string")
    where = _workdir(workspace.resolve(run, workdir or "."))
    run.signal.raise_if_aborted()
    try:
        done = await run_process(
            [config.shell, "-c", command],
            cwd=where.display,
            env=_environment(config, run, where.display),
            signal=run.signal,
            timeout_s=timeout_ms / 1000,
            max_bytes=config.max_output_bytes,
            keep="tail",
        )
    except OSError as exc:
        raise HarnessError(f"failed to start {config.shell}: {exc}", "SPAWN_FAILED") from exc
    if done.stopped == "aborted":
        raise Aborted(run.signal.reason)
    code = done.returncode
    return {
        "kind": "foreground",
        "exitCode": code if code is not None and code >= 0 else None,
        "signal": signal_name(-code) if code is not None and code < 0 else None,
        "timedOut": done.stopped == "timeout",
        "aborted": False,
        "timeoutMs": _number(timeout_ms),
        "stdout": {
            "text": done.stdout.decode("utf-8", "replace"),
            "truncated": done.stdout_truncated,
        },
        "stderr": {
            "text": done.stderr.decode("utf-8", "replace"),
            "truncated": done.stderr_truncated,
        },
    }


_TRUNCATED = "\n[output truncated; full output: (unavailable)]"


def render_bash(args: Json, value: Mapping[str, Json]) -> str:
    """The model-facing text of a foreground result (TOOLS.md §2)."""
    stdout, stderr = value["stdout"], value["stderr"]
    assert isinstance(stdout, Mapping) and isinstance(stderr, Mapping)
    text = str(stdout["text"])
    if stdout["truncated"]:
        text += _TRUNCATED
    if stderr["text"] or stderr["truncated"]:
        if text and not text.endswith("\n"):
            text += "\n"
        text += "[stderr]\n" + str(stderr["text"])
        if stderr["truncated"]:
            text += _TRUNCATED
    if not text:
        text = "(no output)"
    markers = []
    if value["timedOut"]:
        markers.append(f"[timed out after {value['timeoutMs']}ms]")
    if value["signal"] is not None:
        markers.append(f"[killed by signal: {value['signal']}]")
    elif value["exitCode"] not in (0, None):
        markers.append(f"[exit code: {value['exitCode']}]")
    for marker in markers:
        if not text.endswith("\n"):
            text += "\n"
        text += marker
    return text


BashToolPlugin = ToolPlugin(
    "tool_bash", lambda _ctx, c: bash_tool(c), config=BashConfig, guidance=(105, GUIDANCE)
)
"""Registers the `bash` tool and its `tool:bash` guidance section (order 105)."""
