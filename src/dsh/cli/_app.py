"""The `dsh` command table: each command parses its options and hands over to its module.
Add a command here as one more decorated function (or `app.add_typer` for a group)."""

from __future__ import annotations

import copy
import io
import itertools
import os
import sys
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import msgspec
import typer

from .._process import resume_collector
from .._version import __version__
from ._errors import exit_with, exit_with_sync, run_app

if TYPE_CHECKING:
    from ..plugins.usage import UsageLimits

app = typer.Typer(
    name="dsh",
    help="dsh: an agent harness in which everything is a plugin.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)
config_app = typer.Typer(help="Inspect the effective settings.", no_args_is_help=True)
app.add_typer(config_app, name="config")
sessions_app = typer.Typer(help="Persisted sessions.", no_args_is_help=True)
app.add_typer(sessions_app, name="sessions")
hooks_app = typer.Typer(help="Command hooks (Claude Code's dialect).", no_args_is_help=True)
app.add_typer(hooks_app, name="hooks")
mcp_app = typer.Typer(
    help="MCP servers: their tools in every agent; dsh as one.", no_args_is_help=True
)
app.add_typer(mcp_app, name="mcp")

ProfileOption = Annotated[
    list[Path] | None,
    typer.Option(
        "--profile",
        "-p",
        metavar="FILE",
        help=(
            "A profile YAML layered over the default (repeatable; ./dsh.yml is read if "
            "its folder is trusted)."
        ),
    ),
]
ProviderOption = Annotated[
    str | None,
    typer.Option(
        "--provider", metavar="ROUTE", help="A route the profile mounts (with a bare --model id)."
    ),
]
ModelOption = Annotated[
    str | None,
    typer.Option(
        "--model",
        "-m",
        metavar="PROVIDER:MODEL",
        help="deepseek:<id>, openai:<id> or <route>:<id>; a bare id is DeepSeek's "
        "(default: $DSH_MODEL, else deepseek-v4-flash).",
    ),
]
BaseUrlOption = Annotated[
    str | None,
    typer.Option(
        "--base-url",
        metavar="URL",
        help="The server of a deepseek: or openai: model (any OpenAI-compatible server).",
    ),
]
CwdOption = Annotated[
    Path | None,
    typer.Option(
        "--cwd", metavar="DIR", help="The agent's workspace (default: the current directory)."
    ),
]
PortOption = Annotated[
    int, typer.Option("--port", min=0, max=65535, metavar="N", help="The port (0: a free one).")
]
HostOption = Annotated[
    str,
    typer.Option(
        "--host",
        metavar="ADDR",
        help="The address to listen on; another than this machine's needs --token-file.",
    ),
]
TokenFileOption = Annotated[
    Path | None,
    typer.Option(
        "--token-file", metavar="FILE", help="A file (mode 600) holding the access token."
    ),
]
YesOption = Annotated[bool, typer.Option("--yes", "-y", help="Approve every tool call.")]
ContinueOption = Annotated[
    bool,
    typer.Option("--continue", "-c", help="Continue the latest session of this workspace."),
]
PlainOption = Annotated[
    bool, typer.Option("--plain", help="Print answers as raw text (no Markdown rendering).")
]
JsonOption = Annotated[bool, typer.Option("--json", help="Raw JSON lines.")]


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


class OutputFormat(StrEnum):
    text = "text"
    json = "json"
    stream_json = "stream-json"


class ReplayTools(StrEnum):
    recorded = "recorded"
    rerun = "rerun"


class BatchFormat(StrEnum):
    tasks = "tasks"
    swebench = "swebench"


OtelOption = Annotated[
    bool,
    typer.Option(
        "--otel",
        help="Send OpenTelemetry traces and metrics where the OTEL_* variables say "
        "(also DSH_OTEL=1).",
    ),
]
TrustOption = Annotated[
    bool,
    typer.Option(
        "--trust-workspace",
        "--trust-hooks",
        help="Trust the workspace for this run: run the hooks and MCP servers its files define.",
    ),
]


MaxStepsOption = Annotated[
    int | None,
    typer.Option(
        "--max-steps",
        "--max-turns",
        min=1,
        metavar="N",
        help="Stop the run before its model request N+1 (steps: model round trips).",
    ),
]
MaxToolCallsOption = Annotated[
    int | None,
    typer.Option(
        "--max-tool-calls", min=0, metavar="N", help="Stop the run before its tool call N+1."
    ),
]
MaxTokensInOption = Annotated[
    int | None,
    typer.Option(
        "--max-tokens-in", min=1, metavar="N", help="Stop the run once it sent N input tokens."
    ),
]
MaxTokensOutOption = Annotated[
    int | None,
    typer.Option(
        "--max-tokens-out",
        min=1,
        metavar="N",
        help="Stop the run once the model wrote N tokens (estimated while it streams).",
    ),
]
MaxCostOption = Annotated[
    float | None,
    typer.Option(
        "--max-cost",
        metavar="USD",
        help="Stop the run once it cost USD (by the usage plugin's prices).",
    ),
]


def _limits(
    steps: int | None,
    tool_calls: int | None,
    tokens_in: int | None,
    tokens_out: int | None,
    cost: float | None,
) -> UsageLimits | None:
    from ..plugins.usage import UsageLimits

    limits = UsageLimits(steps, tool_calls, tokens_in, tokens_out, cost)
    return limits if limits.limits() else None


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
    verbose: Annotated[
        bool,
        typer.Option("--verbose", "-v", help="Log more, and show tracebacks of internal errors."),
    ] = False,
) -> None:
    """dsh command line."""
    from ._errors import configure_logging

    configure_logging(verbose)


@app.command("run")
def run_command(
    task: Annotated[str | None, typer.Argument(metavar="TASK", hidden=True)] = None,
    profile: ProfileOption = None,
    model: ModelOption = None,
    base_url: BaseUrlOption = None,
    provider: ProviderOption = None,
    cwd: CwdOption = None,
    yes: YesOption = False,
    continue_: ContinueOption = False,
    plain: PlainOption = False,
    json_: Annotated[
        bool,
        typer.Option("--json", help="Print every session event, one per line, as logged."),
    ] = False,
    output_format: Annotated[
        OutputFormat,
        typer.Option(
            "--output-format",
            help="text (default); json: one result object at the end; stream-json: one "
            "message per line, then the result (Claude Code's headless shapes).",
        ),
    ] = OutputFormat.text,
    trust: TrustOption = False,
    sandbox: SandboxOption = None,
    plan: Annotated[
        bool,
        typer.Option(
            "--plan",
            help="Plan first: only reading tools run until a plan is approved (--yes "
            "approves it; without, the plan is the answer).",
        ),
    ] = False,
    otel: OtelOption = False,
    max_steps: MaxStepsOption = None,
    max_tool_calls: MaxToolCallsOption = None,
    max_tokens_in: MaxTokensInOption = None,
    max_tokens_out: MaxTokensOutOption = None,
    max_cost: MaxCostOption = None,
) -> None:
    """Run an agent on TASK (`-`, or no TASK and a pipe: read it from stdin); exit 0 when
    its turn completed, 4 when it stopped at a budget."""
    from ._run import RunOptions, run_task

    options = RunOptions(profile, model, base_url, provider, cwd, None, continue_, yes, plain)
    if json_ and output_format is not OutputFormat.text:
        raise typer.BadParameter("--json and --output-format are two outputs: pick one")
    options = msgspec.structs.replace(
        options, task=task, json=json_, trust=trust, plan=plan, otel=otel
    )
    options = msgspec.structs.replace(options, output_format=output_format.value)
    limits = _limits(max_steps, max_tool_calls, max_tokens_in, max_tokens_out, max_cost)
    options = msgspec.structs.replace(options, limits=limits)
    exit_with(run_task(msgspec.structs.replace(options, sandbox=_mode(sandbox))))


@app.command("chat")
def chat_command(
    profile: ProfileOption = None,
    model: ModelOption = None,
    base_url: BaseUrlOption = None,
    provider: ProviderOption = None,
    cwd: CwdOption = None,
    continue_: ContinueOption = False,
    resume: Annotated[
        str | None, typer.Option("--resume", "-r", metavar="ID", help="Resume this session.")
    ] = None,
    yes: YesOption = False,
    plain: PlainOption = False,
    sandbox: SandboxOption = None,
    otel: OtelOption = False,
    max_steps: MaxStepsOption = None,
    max_tool_calls: MaxToolCallsOption = None,
    max_tokens_in: MaxTokensInOption = None,
    max_tokens_out: MaxTokensOutOption = None,
    max_cost: MaxCostOption = None,
) -> None:
    """Talk with an agent: Enter sends, Ctrl-C cancels the running turn, /help for more."""
    from ._chat import chat
    from ._runtime import Options

    options = Options(profile, model, base_url, provider, cwd, resume, continue_, yes, plain)
    limits = _limits(max_steps, max_tool_calls, max_tokens_in, max_tokens_out, max_cost)
    options = msgspec.structs.replace(options, sandbox=_mode(sandbox), otel=otel, limits=limits)
    exit_with(chat(options))


@app.command("demo")
def demo_command(
    task: Annotated[str | None, typer.Argument(metavar="TASK", hidden=True)] = None,
    cwd: CwdOption = None,
    yes: YesOption = False,
) -> None:
    """The main job: an agent on a sample task (or your TASK) in a scratch workspace
    (DeepSeek when DEEPSEEK_API_KEY is set, else a scripted demo model over a loopback HTTP
    server). Only the sample runs its tools unasked; yours need --yes."""
    from ._demo import run_demo

    exit_with(run_demo(task, cwd, yes=yes))


@config_app.command("show")
def config_show(
    profile: ProfileOption = None,
    cwd: CwdOption = None,
    model: ModelOption = None,
    base_url: BaseUrlOption = None,
) -> None:
    """Print the effective settings (secrets masked) and the plugin rows."""
    from ._config import show_config

    exit_with(show_config(profile, cwd, model, base_url))


@sessions_app.command("list")
def sessions_list(
    profile: ProfileOption = None,
    json_: JsonOption = False,
    limit: Annotated[int, typer.Option("--limit", "-n", metavar="N", help="How many.")] = 20,
) -> None:
    """List stored sessions, most recently active first, with their workspace (`.`: this
    folder)."""
    from ._sessions import list_sessions

    exit_with(list_sessions(profile, json_, limit))


SessionArgument = Annotated[str, typer.Argument(metavar="ID", hidden=True)]


@sessions_app.command("show")
def sessions_show(
    session_id: SessionArgument, profile: ProfileOption = None, json_: JsonOption = False
) -> None:
    """Print the transcript of session ID (a unique prefix is enough; `--json`: its header
    and raw events)."""
    from ._sessions import show_session

    exit_with(show_session(profile, session_id, json_))


@sessions_app.command("export")
def sessions_export(
    session_id: SessionArgument,
    profile: ProfileOption = None,
    format_: Annotated[
        str, typer.Option("--format", metavar="FORMAT", help="atif (Harbor's trajectories).")
    ] = "atif",
    out: Annotated[
        Path | None, typer.Option("--out", "-o", metavar="FILE", help="Write here, not stdout.")
    ] = None,
) -> None:
    """Export session ID (a unique prefix is enough) as an ATIF trajectory (JSON), its
    subagents' sessions embedded."""
    from ._export import export_session_file

    if format_ != "atif":
        raise typer.BadParameter(f"unknown format {format_!r} (known: atif)", param_hint="--format")
    exit_with(export_session_file(profile, session_id, "atif", out))


@sessions_app.command("repair")
def sessions_repair(session_id: SessionArgument, profile: ProfileOption = None) -> None:
    """Cut a corrupt log back to its valid part; the rest is moved to a file beside it."""
    from ._sessions import repair_session

    exit_with(repair_session(profile, session_id))


@sessions_app.command("rewind")
def sessions_rewind(
    session_id: SessionArgument,
    to: Annotated[
        int | None, typer.Option("--to", metavar="N", help="Back to just before prompt N.")
    ] = None,
    code: Annotated[bool, typer.Option("--code", help="Only the workspace's files.")] = False,
    conversation: Annotated[
        bool, typer.Option("--conversation", help="Only the conversation.")
    ] = False,
    both: Annotated[bool, typer.Option("--both", help="Files and conversation (default).")] = False,
    undo: Annotated[bool, typer.Option("--undo", help="Undo the last rewind.")] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Show what would change.")] = False,
    force: Annotated[
        bool, typer.Option("--force", help="Also take back files changed outside dsh.")
    ] = False,
    profile: ProfileOption = None,
    json_: JsonOption = False,
) -> None:
    """Rewind session ID's files, conversation or both to just before prompt N (without
    --to: list the prompts and the files each changed, read only)."""
    from ._rewind import rewind_session

    chosen = [m for m, on in (("code", code), ("conversation", conversation), ("both", both)) if on]
    if len(chosen) > 1:
        raise typer.BadParameter("choose one of --code, --conversation, --both")
    if undo and to is not None:
        raise typer.BadParameter("--undo takes no --to", param_hint="--undo")
    mode = chosen[0] if chosen else "both"
    exit_with(
        rewind_session(
            profile,
            session_id,
            to,
            mode,  # type: ignore[arg-type]
            undo=undo,
            dry_run=dry_run,
            force=force,
            as_json=json_,
            modes=[f"--{m}" for m in chosen],
        )
    )


@sessions_app.command("diff")
def sessions_diff(
    session_id: SessionArgument,
    turn: Annotated[
        int | None, typer.Option("--turn", metavar="N", help="This turn (default: the last).")
    ] = None,
    profile: ProfileOption = None,
) -> None:
    """What a turn of session ID changed in the workspace (shell commands' changes too)."""
    from ._rewind import diff_session

    exit_with(diff_session(profile, session_id, turn))


@sessions_app.command("stats")
def sessions_stats(profile: ProfileOption = None, json_: JsonOption = False) -> None:
    """Usage of every stored session by day (UTC) and model: requests, tool calls, tokens,
    the share served from cache, and the cost by the profile's prices."""
    from ._sessions import session_stats

    exit_with(session_stats(profile, json_))


@sessions_app.command("resume")
def sessions_resume(
    session_id: SessionArgument,
    task: Annotated[str | None, typer.Argument(metavar="TASK", hidden=True)] = None,
    profile: ProfileOption = None,
    model: ModelOption = None,
    base_url: BaseUrlOption = None,
    provider: ProviderOption = None,
    yes: YesOption = False,
    trust: TrustOption = False,
    otel: OtelOption = False,
) -> None:
    """Resume session ID (a unique prefix is enough): run TASK in it, or chat in it."""
    from ._run import RunOptions, run_task

    options = RunOptions(
        profile, model, base_url, provider, resume=session_id, yes=yes, trust=trust, otel=otel
    )
    if task is None:
        from ._chat import chat

        exit_with(chat(options))
    exit_with(run_task(msgspec.structs.replace(options, task=task)))


@hooks_app.command("list")
def hooks_list(
    profile: ProfileOption = None, cwd: CwdOption = None, trust: TrustOption = False
) -> None:
    """The hooks an agent in this workspace would have: where each comes from, and whether
    it runs (a workspace's own hooks run once it is trusted)."""
    from ._hooks import list_hooks

    exit_with(list_hooks(profile, cwd, trust))


@mcp_app.command("list")
def mcp_list(
    profile: ProfileOption = None,
    cwd: CwdOption = None,
    json_: JsonOption = False,
    trust: TrustOption = False,
) -> None:
    """Start the configured servers and list them: transport, status, tools (or why not)."""
    from ._mcp import list_servers

    exit_with(list_servers(profile, cwd, json_, trust))


ServerArgument = Annotated[str, typer.Argument(help="The server's name (see dsh mcp list).")]


@mcp_app.command("login")
def mcp_login(
    name: ServerArgument,
    profile: ProfileOption = None,
    cwd: CwdOption = None,
    browser: Annotated[
        bool, typer.Option("--browser/--no-browser", help="Open the login page in a browser.")
    ] = True,
) -> None:
    """Log in to a remote server (OAuth): the browser comes back to 127.0.0.1, or paste the
    address it ends on. Tokens are kept in $DSH_HOME/mcp-auth (0600)."""
    from ._mcp import login_server

    exit_with(login_server(profile, cwd, name, browser))


@mcp_app.command("logout")
def mcp_logout(name: ServerArgument, profile: ProfileOption = None, cwd: CwdOption = None) -> None:
    """Revoke (where the server offers it) and delete a server's stored OAuth tokens."""
    from ._mcp import logout_server

    exit_with(logout_server(profile, cwd, name))


ScopeOption = Annotated[
    str,
    typer.Option("--scope", "-s", help="project (./.mcp.json) or user ($DSH_HOME/mcp.json)."),
]


@mcp_app.command("add")
def mcp_add(
    name: Annotated[str, typer.Argument(help="The server's name (its tools: mcp__NAME__*).")],
    target: Annotated[
        list[str], typer.Argument(help="COMMAND ARGS… after --, or the URL of an http/sse server.")
    ],
    transport: Annotated[
        str, typer.Option("--transport", "-t", help="stdio, http or sse.")
    ] = "stdio",
    env: Annotated[
        list[str] | None, typer.Option("--env", "-e", help="KEY=VALUE for a stdio server.")
    ] = None,
    header: Annotated[
        list[str] | None, typer.Option("--header", "-H", help="'Name: value' for http/sse.")
    ] = None,
    scope: ScopeOption = "project",
    cwd: CwdOption = None,
) -> None:
    """Add a server to .mcp.json: `dsh mcp add NAME -- CMD ARGS…` or
    `dsh mcp add --transport http NAME URL --header 'K: V'`."""
    from ._mcp import add_server

    exit_with_sync(
        lambda: add_server(
            name,
            target,
            transport=transport,
            env=env or [],
            headers=header or [],
            scope=scope,
            cwd=cwd,
        )
    )


@mcp_app.command("remove")
def mcp_remove(
    name: Annotated[str, typer.Argument(help="The server's name.")],
    scope: Annotated[
        str | None,
        typer.Option("--scope", "-s", help="project or user (default: where it is found)."),
    ] = None,
    cwd: CwdOption = None,
) -> None:
    """Remove a server from .mcp.json (or the user's mcp.json)."""
    from ._mcp import remove_server

    exit_with_sync(lambda: remove_server(name, scope=scope, cwd=cwd))


@mcp_app.command("serve")
def mcp_serve(
    profile: ProfileOption = None,
    provider: ProviderOption = None,
    model: ModelOption = None,
    cwd: CwdOption = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Approve every tool call.")] = False,
) -> None:
    """dsh as an MCP server on stdio, with one tool: run_agent {prompt, cwd?, session_id?}."""
    from ._mcp import serve

    exit_with(serve(profile, provider, model, cwd, yes))


@app.command("batch")
def batch_command(
    tasks: Annotated[Path, typer.Argument(metavar="TASKS", hidden=True)],
    out: Annotated[
        Path,
        typer.Option(
            "--out", "-o", metavar="FILE", help="The results file (JSONL; a rerun resumes it)."
        ),
    ],
    concurrency: Annotated[
        int,
        typer.Option("--concurrency", "-j", min=1, metavar="N", help="Tasks running at once."),
    ] = 8,
    ray: Annotated[
        str | None,
        typer.Option(
            "--ray",
            metavar="ADDRESS",
            help="Run on Ray actors: `--ray` alone starts a local Ray, `--ray ADDRESS` joins "
            "a cluster (auto, ray://host:10001). Needs a PostgreSQL store.",
        ),
    ] = None,
    workers: Annotated[int, typer.Option("--workers", min=1, metavar="N", help="Ray actors.")] = 2,
    store: Annotated[
        str | None,
        typer.Option(
            "--store",
            metavar="STORE",
            help="Session store: postgresql://…, sqlite:PATH or a folder (JSONL).",
        ),
    ] = None,
    model: Annotated[
        str | None,
        typer.Option(
            "--model", "-m", metavar="PROVIDER:MODEL", help="The model of tasks that name none."
        ),
    ] = None,
    base_url: BaseUrlOption = None,
    profile: ProfileOption = None,
    cwd: CwdOption = None,
    yes: YesOption = False,
    sandbox: SandboxOption = None,
    session_prefix: Annotated[
        str | None,
        typer.Option(
            "--session-prefix",
            metavar="PREFIX",
            help="Session ids are PREFIX + task id (default: OUT-).",
        ),
    ] = None,
    format_: Annotated[
        BatchFormat,
        typer.Option(
            "--format",
            help="tasks (default): dsh task lines; swebench: SWE-bench instances, and a "
            "predictions file of the workspaces' diffs.",
        ),
    ] = BatchFormat.tasks,
    predictions: Annotated[
        Path | None,
        typer.Option(
            "--predictions",
            metavar="FILE",
            help="swebench: the predictions file (default: OUT's name + .predictions.jsonl).",
        ),
    ] = None,
    repos: Annotated[
        Path | None,
        typer.Option(
            "--repos",
            metavar="DIR",
            help="swebench: an instance without repo_path is checked out at DIR/<instance_id>.",
        ),
    ] = None,
    model_name: Annotated[
        str,
        typer.Option(
            "--model-name", metavar="NAME", help="swebench: the predictions' model_name_or_path."
        ),
    ] = "dsh",
    max_steps: MaxStepsOption = None,
    max_tool_calls: MaxToolCallsOption = None,
    max_tokens_in: MaxTokensInOption = None,
    max_tokens_out: MaxTokensOutOption = None,
    max_cost: MaxCostOption = None,
) -> None:
    """Run every task of TASKS, each in its own session; results to --out (a rerun resumes).

    TASKS is a JSONL file, one task per line: {"id": "t1", "prompt": "…"} and optionally
    "cwd" (relative to the file), "model" (provider:model) and "profile" (a file). With
    --format swebench: SWE-bench instances ({"instance_id", "problem_statement", "repo",
    "base_commit"} and "repo_path", the checkout at base_commit). The budgets (--max-steps,
    --max-cost, …) hold per task.
    """
    from ._batch import BatchOptions, SweBenchOptions, run_batch

    options = BatchOptions(
        tasks, out, concurrency, ray, workers, store, model, profile, cwd, yes, session_prefix
    )
    limits = _limits(max_steps, max_tool_calls, max_tokens_in, max_tokens_out, max_cost)
    swebench = None
    if format_ is BatchFormat.swebench:
        swebench = SweBenchOptions(predictions, repos, model_name)
    options = msgspec.structs.replace(
        options, base_url=base_url, sandbox=_mode(sandbox), limits=limits, swebench=swebench
    )
    exit_with(run_batch(options))


@app.command("replay")
def replay_command(
    session_id: Annotated[str | None, typer.Argument(metavar="ID", hidden=True)] = None,
    directory: Annotated[
        Path | None,
        typer.Option(
            "--dir", metavar="DIR", help="Replay every session log under DIR, as a table."
        ),
    ] = None,
    tools: Annotated[
        ReplayTools,
        typer.Option(
            "--tools",
            help="recorded (default): each call gets its recorded result; rerun: the tools "
            "run again in a scratch copy of the workspace.",
        ),
    ] = ReplayTools.recorded,
    workspace: Annotated[
        Path | None,
        typer.Option(
            "--workspace",
            metavar="DIR",
            help="The folder --tools rerun copies (default: the session's, as it is now).",
        ),
    ] = None,
    profile: ProfileOption = None,
    json_: JsonOption = False,
) -> None:
    """Run stored session ID (a unique prefix, or a session log file) again through
    today's code, offline, its recorded answers as the model; print where it diverged (the
    first differing request as a diff of the request bodies, and the tool calls or results
    that differ). Exit 0 when identical, 1 when it diverged."""
    from ._replay import ReplayOptions, run_replay

    options = ReplayOptions(session_id, directory, tools.value, profile, workspace, json_)
    exit_with(run_replay(options))


@app.command("web")
def web_command(
    cwd: CwdOption = None,
    port: PortOption = 8765,
    host: HostOption = "127.0.0.1",
    token_file: TokenFileOption = None,
    no_open: Annotated[bool, typer.Option("--no-open", help="Do not open a browser.")] = False,
    profile: ProfileOption = None,
    model: ModelOption = None,
    base_url: BaseUrlOption = None,
    provider: ProviderOption = None,
) -> None:
    """Chat and browse sessions in the browser; prints the URL (it carries the access token)."""
    from ._runtime import Options
    from ._web import WebOptions, run_web

    options = Options(profile, model, base_url, provider, cwd)
    exit_with(run_web(WebOptions(options, port, host, token_file, no_open)))


@app.command("a2a")
def a2a_command(
    cwd: CwdOption = None,
    port: PortOption = 8766,
    host: HostOption = "127.0.0.1",
    token_file: TokenFileOption = None,
    profile: ProfileOption = None,
    model: ModelOption = None,
    base_url: BaseUrlOption = None,
    provider: ProviderOption = None,
) -> None:
    """Serve the workspace as an A2A agent (Agent Card, JSON-RPC, streaming); prints the
    endpoint and, unless --token-file gives it, the bearer token."""
    from ._runtime import Options
    from ._web import WebOptions, run_web

    options = Options(profile, model, base_url, provider, cwd)
    exit_with(run_web(WebOptions(options, port, host, token_file, True, a2a_only=True)))


@app.command("jsonrpc")
def jsonrpc() -> None:
    """Serve the JSON-RPC SDK protocol on stdin/stdout (logs go to stderr)."""
    from ..server import main as serve_jsonrpc

    serve_jsonrpc([])


@app.command("acp")
def acp_command(
    profile: ProfileOption = None,
    model: ModelOption = None,
    base_url: BaseUrlOption = None,
    provider: ProviderOption = None,
    max_turn_requests: Annotated[
        int | None,
        typer.Option(
            "--max-turn-requests",
            min=1,
            metavar="N",
            help="Model requests a prompt may make before it stops (max_turn_requests).",
        ),
    ] = None,
) -> None:
    """Serve the Agent Client Protocol on stdin/stdout, for editors such as Zed (logs go
    to stderr)."""
    from ._acp import serve_acp

    exit_with(serve_acp(profile, model, base_url, provider, max_turn_requests))


def run(argv: list[str]) -> None:
    # What reaches stdout may hold a lone surrogate (an old log) or a character the locale
    # cannot encode: it is escaped, never a crash mid-transcript (stderr does this already).
    if isinstance(sys.stdout, io.TextIOWrapper):
        sys.stdout.reconfigure(errors="backslashreplace")
    args = _optional_value(argv, "--ray", "local")
    if _command_name(args) not in _BOOTING:  # no boot to settle: the collector runs as ever
        resume_collector()
    run_app(_table_for(args), args)


_BOOTING = ("run", "chat", "web", "a2a", "acp")
"""Commands that boot a runtime: the collector stays paused until `start_runtime` settles
it (see `dsh._process.pause_collector`)."""


def _command_name(args: list[str]) -> str | None:
    """The command (or group) `args` names; None for the root's own options (`--help`,
    `--version`), several root options, and shell completion."""
    options = list(itertools.takewhile(lambda arg: arg.startswith("-"), args))
    rest = args[len(options) :]
    if not rest or set(options) - {"-v", "--verbose"} or _COMPLETE_VARIABLE in os.environ:
        return None
    return rest[0]


def _table_for(args: list[str]) -> typer.Typer:
    """The table with only the command (or group) `args` names: typer builds the parser of every
    command it holds before it looks at the arguments (~80 M instructions for all of them,
    a twentieth of `dsh run`), and a command's help, errors and usage line do not depend on
    its siblings. The whole table for anything else: the root's help (`dsh --help run`
    too), an unknown name (its "No such command" error) and shell completion."""
    name = _command_name(args)
    if name is None:
        return app
    commands = [command for command in app.registered_commands if command.name == name]
    groups = [group for group in app.registered_groups if group.name == name]
    if not commands and not groups:
        return app
    table = copy.copy(app)
    table.registered_commands, table.registered_groups = commands, groups
    return table


_COMPLETE_VARIABLE = "_DSH_COMPLETE"
"""Set by the shell when it asks for completions (typer's `_{PROG}_COMPLETE`)."""


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
