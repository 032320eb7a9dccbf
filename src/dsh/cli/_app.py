"""The typer application behind `dsh`."""

from __future__ import annotations

import io
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer

from .._version import __version__

app = typer.Typer(
    name="dsh",
    help="dsh: an agent harness in which everything is a plugin.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
config_app = typer.Typer(help="Inspect the plugin composition.", no_args_is_help=True)
app.add_typer(config_app, name="config")
sessions_app = typer.Typer(help="Persisted sessions.", no_args_is_help=True)
app.add_typer(sessions_app, name="sessions")
hooks_app = typer.Typer(help="Command hooks (Claude Code's dialect).", no_args_is_help=True)
app.add_typer(hooks_app, name="hooks")

ProfileOption = Annotated[
    list[Path] | None,
    typer.Option(
        "--profile",
        "-p",
        help="A profile YAML layered over the default (repeatable; ./dsh.yml is read if present).",
    ),
]


def _version_callback(value: bool) -> None:
    if value:
        typer.echo(f"dsh {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version_callback, is_eager=True, help="Print the version."
        ),
    ] = False,
) -> None:
    """dsh command line."""


@config_app.command("show")
def config_show(profile: ProfileOption = None) -> None:
    """Print the resolved plugin rows (default profile, then each layer)."""
    import yaml

    from ..kernel import CompositionError, load_profile
    from ..kernel._compose import prepare
    from ._runtime import profile_files, sandbox_status

    try:
        resolved = load_profile(profile_files(profile))
        prepare(resolved)
        sandbox = sandbox_status(resolved)
    except (CompositionError, ValueError) as exc:
        typer.echo(f"dsh: {exc}", err=True)
        raise typer.Exit(2) from None
    typer.echo(f"# layers: {', '.join(resolved.sources) or '(none)'}")
    if sandbox is not None:
        typer.echo(f"# {sandbox}")
    typer.echo(yaml.safe_dump(resolved.to_data(), sort_keys=False).rstrip() or "[]")


ProviderOption = Annotated[
    str | None,
    typer.Option("--provider", help="Model provider route (default: deepseek-official)."),
]
ModelOption = Annotated[str | None, typer.Option("--model", help="Model id.")]
CwdOption = Annotated[
    Path | None,
    typer.Option("--cwd", help="The agent's workspace (default: the current directory)."),
]
TrustOption = Annotated[
    bool,
    typer.Option(
        "--trust-workspace",
        "--trust-hooks",
        help="Trust the workspace for this run: run the hooks and MCP servers its files define.",
    ),
]


class SandboxMode(StrEnum):
    read_only = "read-only"
    workspace_write = "workspace-write"
    danger_full_access = "danger-full-access"


SandboxOption = Annotated[
    SandboxMode | None,
    typer.Option(
        "--sandbox",
        help="Where bash may write: read-only, workspace-write (default) or "
        "danger-full-access (no sandbox).",
    ),
]


def _mode(value: SandboxMode | None) -> str | None:
    return None if value is None else value.value


def _exit_with(coro: Any) -> NoReturn:
    """Run a command coroutine; user-fixable problems print one line and exit 2."""
    import asyncio

    from ..kernel import CompositionError
    from ..persistence import PersistenceError
    from ..workspace import SettingsError
    from ._runtime import CliError

    try:
        code = asyncio.run(coro)
    except (CliError, CompositionError, PersistenceError, SettingsError) as exc:
        typer.echo(f"dsh: {exc}", err=True)
        raise typer.Exit(2) from None
    raise typer.Exit(code)


@app.command("run")
def run_command(
    task: Annotated[str, typer.Argument(help="What the agent should do.")],
    profile: ProfileOption = None,
    provider: ProviderOption = None,
    model: ModelOption = None,
    cwd: CwdOption = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Approve every tool call.")] = False,
    json_: Annotated[
        bool, typer.Option("--json", help="Print one session event per line (for scripts).")
    ] = False,
    trust: TrustOption = False,
    sandbox: SandboxOption = None,
) -> None:
    """Run an agent on one task; exit 0 when its turn completed."""
    from ._run import RunOptions, run_task

    options = RunOptions(
        task, profile, provider, model, cwd, yes, json_, trust=trust, sandbox=_mode(sandbox)
    )
    _exit_with(run_task(options))


@app.command("demo")
def demo_command(
    task: Annotated[str | None, typer.Argument(help="The task (default: fix greeting.py).")] = None,
    cwd: CwdOption = None,
) -> None:
    """The main job: an agent on a sample task in a scratch workspace (DeepSeek when
    DEEPSEEK_API_KEY is set, else a scripted demo model over a loopback HTTP server)."""
    from ._demo import run_demo

    _exit_with(run_demo(task, cwd))


@app.command("chat")
def chat_command(
    profile: ProfileOption = None,
    provider: ProviderOption = None,
    model: ModelOption = None,
    cwd: CwdOption = None,
    sandbox: SandboxOption = None,
) -> None:
    """Talk with an agent: Enter sends, Ctrl-C cancels the running turn, /help for more."""
    from ._chat import chat

    _exit_with(chat(profile, provider, model, cwd, sandbox=_mode(sandbox)))


JsonOption = Annotated[bool, typer.Option("--json", help="Raw JSON lines.")]


@sessions_app.command("list")
def sessions_list(profile: ProfileOption = None, json_: JsonOption = False) -> None:
    """List stored sessions, newest first."""
    from ._sessions import list_sessions

    _exit_with(list_sessions(profile, json_))


@sessions_app.command("show")
def sessions_show(
    session_id: Annotated[str, typer.Argument(help="The session id.")],
    profile: ProfileOption = None,
    json_: JsonOption = False,
) -> None:
    """Print a session's transcript (`--json`: its header and raw events)."""
    from ._sessions import show_session

    _exit_with(show_session(profile, session_id, json_))


@sessions_app.command("repair")
def sessions_repair(
    session_id: Annotated[str, typer.Argument(help="The session id.")],
    profile: ProfileOption = None,
) -> None:
    """Cut a corrupt log back to its valid part; the rest is moved to a file beside it."""
    from ._sessions import repair_session

    _exit_with(repair_session(profile, session_id))


@sessions_app.command("resume")
def sessions_resume(
    session_id: Annotated[str, typer.Argument(help="The session id.")],
    task: Annotated[str | None, typer.Argument(help="A task to run (else: chat).")] = None,
    profile: ProfileOption = None,
    provider: ProviderOption = None,
    model: ModelOption = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Approve every tool call.")] = False,
    trust: TrustOption = False,
) -> None:
    """Resume a session: run a task in it, or chat in it."""
    from ._chat import chat
    from ._run import RunOptions, run_task

    if task is None:
        _exit_with(chat(profile, provider, model, None, resume=session_id))
    options = RunOptions(task, profile, provider, model, None, yes, resume=session_id, trust=trust)
    _exit_with(run_task(options))


@hooks_app.command("list")
def hooks_list(profile: ProfileOption = None, cwd: CwdOption = None) -> None:
    """The hooks an agent in this workspace would have: where each comes from, and whether
    it runs (a workspace's own hooks run once it is trusted)."""
    from ._hooks import list_hooks

    _exit_with(list_hooks(profile, cwd))


@app.command("batch")
def batch_command(
    tasks: Annotated[Path, typer.Argument(help="A JSONL file: one task per line.")],
    out: Annotated[
        Path, typer.Option("--out", "-o", help="The results file (JSONL; a rerun resumes it).")
    ],
    concurrency: Annotated[
        int, typer.Option("--concurrency", "-j", min=1, help="Tasks running at once.")
    ] = 8,
    ray: Annotated[
        str | None,
        typer.Option(
            "--ray",
            help="Run on Ray actors: `--ray` alone starts a local Ray, `--ray ADDRESS` joins "
            "a cluster (auto, ray://host:10001). Needs a PostgreSQL store.",
        ),
    ] = None,
    workers: Annotated[int, typer.Option("--workers", min=1, help="Ray actors.")] = 2,
    store: Annotated[
        str | None,
        typer.Option(
            "--store", help="Session store: postgresql://…, sqlite:PATH or a folder (JSONL)."
        ),
    ] = None,
    model: Annotated[
        str | None, typer.Option("--model", help="provider:model for tasks that name none.")
    ] = None,
    profile: ProfileOption = None,
    cwd: CwdOption = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Approve every tool call.")] = False,
    session_prefix: Annotated[
        str | None,
        typer.Option("--session-prefix", help="Session ids are PREFIX + task id (default: OUT-)."),
    ] = None,
) -> None:
    """Run every task of TASKS.jsonl, each in its own session; results to --out."""
    from ._batch import BatchOptions, run_batch

    options = BatchOptions(
        tasks, out, concurrency, ray, workers, store, model, profile, cwd, yes, session_prefix
    )
    _exit_with(run_batch(options))


@app.command("jsonrpc")
def jsonrpc() -> None:
    """Serve the JSON-RPC SDK protocol on stdin/stdout (logs go to stderr)."""
    from ..server import main as serve_jsonrpc

    serve_jsonrpc()


def run(argv: list[str] | None = None) -> None:
    # What reaches stdout may hold a lone surrogate (an old log) or a character the locale
    # cannot encode: it is escaped, never a crash mid-transcript (stderr does this already).
    if isinstance(sys.stdout, io.TextIOWrapper):
        sys.stdout.reconfigure(errors="backslashreplace")
    args = argv if argv is not None else sys.argv[1:]
    app(args=_optional_value(args, "--ray", "local"), prog_name="dsh")


def _optional_value(args: list[str], option: str, default: str) -> list[str]:
    """`option` may come without its value (the last word, or followed by an option)."""
    out = list(args)
    for i, arg in enumerate(out):
        if arg == "--":
            break
        if arg == option and (i + 1 == len(out) or out[i + 1].startswith("-")):
            out.insert(i + 1, default)
            break
    return out
