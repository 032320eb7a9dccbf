"""`bash`: one command in a fresh `bash -c`, in the session cwd, with the reference's markers."""

from __future__ import annotations

import functools
import logging
import math
import os
from collections.abc import Mapping, Sequence
from typing import Annotated

from msgspec import Meta

from ...kernel import Aborted, Context
from ...llm import HarnessError, Json
from .._seams import SANDBOX, SPILLS, Confinement, SpillStore, SpillWriter
from .._tool_plugin import ToolPlugin
from .._types import ToolDefinition, ToolRunContext, compact_json
from ._args import ArgumentError, optional_text, required_text, schema
from ._process import ProcessResult, Spill, StreamResult, run_process, signal_name
from ._workspace import ResolvedPath, Workspace, WorkspaceConfig

__all__ = ["BashConfig", "BashToolPlugin", "bash_tool", "render_bash"]

GUIDANCE = """\
## bash
- Each call is a fresh shell: `cd` and variables do not carry over (use `workdir`). Check \
every result for a failure marker and look into failures before moving on.
- Use read, write, edit, glob and grep rather than cat, sed, find or grep in the shell."""

DESCRIPTION = """\
Run a command with `bash -c` in a fresh shell (stdin closed), in the working directory or \
`workdir` (inside the workspace). Output: stdout, then stderr after a `[stderr]` line, then \
`[exit code: N]` when non-zero (a normal result), `[timed out after Nms]` or `[killed by \
signal: SIG…]`. Each stream shows its last {max_bytes} bytes (`[output truncated; …]` names \
the file holding all of it). Stopped with its process group after `timeoutMs` (default \
{default_ms}, max {max_ms}): start no server that must outlive the call. A sandbox may \
allow writes only to the workspace and /tmp, with no network (`[sandbox: …]` says so)."""

_log = logging.getLogger("dsh.tools")

_ENV_DEFAULTS = {"NO_COLOR": "1", "TERM": "dumb", "PAGER": "cat", "GIT_PAGER": "cat"}


class BashConfig(WorkspaceConfig):
    """Config of the `bash` tool."""

    timeout_ms: Annotated[int, Meta(gt=0)] = 60_000
    """The timeout when the model gives none."""
    max_timeout_ms: Annotated[int, Meta(gt=0)] = 600_000
    """The cap on any timeout the model asks for."""
    max_output_bytes: Annotated[int, Meta(gt=0)] = 12_000
    """Bytes of each stream the model sees (the tail); with a spill store, a stream over
    this is saved whole to a file (up to 64 MiB) and the result names it. Both streams fit
    under the spill store's threshold for whole results (30,000 characters)."""
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


def bash_tool(config: BashConfig | None = None, services: Context | None = None) -> ToolDefinition:
    """The `bash` tool definition. With `services`, commands run under its sandbox
    (`SANDBOX`) and overflowing streams are saved to its spill store (`SPILLS`), both looked
    up at each call."""
    config = config or BashConfig()
    return ToolDefinition(
        "bash",
        DESCRIPTION.format(
            max_bytes=f"{config.max_output_bytes:,}",
            default_ms=f"{config.timeout_ms:,} ms",
            max_ms=f"{config.max_timeout_ms:,} ms",
        ),
        _parameters(config),
        functools.partial(run_bash, config, config.workspace(), services),
        render=render_bash,
    )


def _parameters(config: BashConfig) -> dict[str, Json]:
    return schema(
        {
            "command": {"type": "string"},
            "description": {
                "type": "string",
                "description": "What it does, in 5-10 words (shown to the user).",
            },
            "timeoutMs": {"type": "number"},
            "workdir": {"type": "string", "description": "Relative to the working directory."},
        },
        ("command", "description"),
    )


async def run_bash(
    config: BashConfig,
    workspace: Workspace,
    services: Context | None,
    args: Mapping[str, Json],
    run: ToolRunContext,
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
    argv: Sequence[str] = [config.shell, "-c", command]
    sandbox = services.get(SANDBOX) if services is not None else None
    confinement = None
    if sandbox is not None:
        roots = workspace.roots(where.cwd)
        confinement = await sandbox.confine(run, argv, cwd=where.display, roots=roots)
        argv = confinement.argv
    spills = services.get(SPILLS) if services is not None else None
    try:
        done = await run_process(
            argv,
            cwd=where.display,
            env=_environment(config, run, where.display),
            signal=run.signal,
            timeout_s=timeout_ms / 1000,
            max_bytes=config.max_output_bytes,
            keep="tail",
            spill=None if spills is None else _spill_opener(spills, run),
            pass_fds=() if confinement is None else confinement.pass_fds,
            on_output=run.output,
        )
    except OSError as exc:
        raise HarnessError(f"failed to start {argv[0]}: {exc}", "SPAWN_FAILED") from exc
    finally:
        if confinement is not None and confinement.release is not None:
            confinement.release()
    value = await _value(done, timeout_ms, confinement)  # closes any spill file
    if done.stopped == "aborted":
        raise Aborted(run.signal.reason)
    return value


def _spill_opener(spills: SpillStore, run: ToolRunContext) -> Spill:
    def open_spill(stream: str) -> SpillWriter | None:
        try:
            return spills.writer(run, f"{run.call_id}-bash-{stream}.txt")
        except OSError as exc:
            _log.warning("bash: cannot spill %s of call %s: %s", stream, run.call_id, exc)
            return None

    return open_spill


async def _stream(stream: StreamResult) -> dict[str, Json]:
    value: dict[str, Json] = {
        "text": stream.data.decode("utf-8", "replace"),
        "truncated": stream.truncated,
    }
    if stream.spill is not None:
        try:
            value["spillPath"] = await stream.spill.commit()
            value["bytes"] = stream.total
        except OSError as exc:
            _log.warning("bash: cannot save spilled output: %s", exc)
    return value


async def _value(
    done: ProcessResult, timeout_ms: float, confinement: Confinement | None
) -> dict[str, Json]:
    code = done.returncode
    value: dict[str, Json] = {
        "kind": "foreground",
        "exitCode": code if code is not None and code >= 0 else None,
        "signal": signal_name(-code) if code is not None and code < 0 else None,
        "timedOut": done.stopped == "timeout",
        "aborted": False,
        "timeoutMs": _number(timeout_ms),
        "stdout": await _stream(done.stdout),
        "stderr": await _stream(done.stderr),
    }
    if confinement is not None and confinement.confined:
        denied = code != 0 and any(_DENIED in s.data for s in (done.stdout, done.stderr))
        value["sandbox"] = {"mode": confinement.mode, "denied": denied}
    return value


_DENIED = b"Read-only file system"
"""What a sandboxed write outside the writable roots fails with (EROFS)."""


def _truncated(stream: Mapping[str, Json]) -> str:
    path = stream.get("spillPath")
    if path is None:
        return "\n[output truncated; full output: (unavailable)]"
    return (
        f"\n[output truncated; full output: {path} ({stream['bytes']:,} bytes; "
        "read it with the read tool, using offset/limit)]"
    )


def _denied(mode: str) -> str:
    writable = (
        "the workspace (not its control files: .git/hooks, .git/config, .claude, .mcp.json, "
        "dsh.yml…) and /tmp"
        if mode == "workspace-write"
        else "/tmp"
    )
    return (
        f"[sandbox: file access denied under {mode} mode: commands may write only to "
        f"{writable}. Do not work around it; if the task needs more, say so to the user.]"
    )


def render_bash(args: Json, value: Mapping[str, Json]) -> str:
    """The model-facing text of a foreground result (TOOLS.md §2)."""
    stdout, stderr = value["stdout"], value["stderr"]
    assert isinstance(stdout, Mapping) and isinstance(stderr, Mapping)
    text = str(stdout["text"])
    if stdout["truncated"]:
        text += _truncated(stdout)
    if stderr["text"] or stderr["truncated"]:
        if text and not text.endswith("\n"):
            text += "\n"
        text += "[stderr]\n" + str(stderr["text"])
        if stderr["truncated"]:
            text += _truncated(stderr)
    if not text:
        text = "(no output)"
    markers = []
    sandbox = value.get("sandbox")
    if isinstance(sandbox, Mapping) and sandbox["denied"]:
        markers.append(_denied(str(sandbox["mode"])))
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
    "tool_bash", lambda ctx, c: bash_tool(c, ctx), config=BashConfig, guidance=(105, GUIDANCE)
)
"""Registers the `bash` tool and its `tool:bash` guidance section (order 105)."""
