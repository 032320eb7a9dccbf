"""What the CLI commands share: the checks made before any model call, the profile, the
route, the runtime and its agents."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path

import msgspec

from .._context import Context
from .._ids import uuid4_text
from .._process import settle_collector
from ..agent import AgentHandle, AgentOptions, CreateAgentOptions, ResumeAgentOptions
from ..kernel import load_config
from ..llm import Json
from ..llm.adapters import ModelRoute
from ..persistence import CorruptLogError, PersistenceError
from ..profiles import Profile, boot, load_profile
from ..session import SessionMeta, Usage
from ._trust import LOCAL_PROFILE, local_profile_note, trust_for_run, untrusted_local_profile

DEFAULT_PROVIDER = "deepseek-official"
DEFAULT_MODEL = "deepseek-v4-flash"


class CliError(Exception):
    """A problem the user can fix; printed as one line without a traceback, exit code 2."""


def profile_files(extra: list[Path] | None, *, trust_workspace: bool = False) -> list[Path]:
    """`./dsh.yml` when present and its folder is trusted (or `--trust-workspace` trusts it
    for this run), then each `--profile` file, in order. A profile mounts plugins and sets
    policies, so a cloned repository's `dsh.yml` waits for trust like its settings files;
    skipped, it gets a one-line note. Named with `--profile`, it is the user's own choice."""
    extra = list(extra or [])
    if not LOCAL_PROFILE.is_file() or LOCAL_PROFILE.resolve() in [p.resolve() for p in extra]:
        return extra
    if not trust_workspace and untrusted_local_profile() is not None:
        print(f"dsh: note: {local_profile_note()}", file=sys.stderr)
        return extra
    return [LOCAL_PROFILE.absolute(), *extra]


def build_profile(
    extra: list[Path] | None,
    *,
    yes: bool = False,
    trust_workspace: bool = False,
    sandbox: str | None = None,
    workspace: Path | None = None,
    otel: bool = False,
) -> Profile:
    """The layered profile; `yes` approves every ask, `trust_workspace` runs the
    workspace's own files for this run, `sandbox` sets the sandbox row's mode, `workspace`
    is where the mcp row reads `.mcp.json` (the agent's `--cwd`), `otel` adds tracing."""
    profile = load_profile(profile_files(extra, trust_workspace=trust_workspace))
    if otel:
        from ..profiles import with_otel

        profile = with_otel(profile)
    if yes:
        profile = profile.with_config("approval", auto_approve=True)
    if trust_workspace:
        profile = trust_for_run(profile)
    if sandbox is not None:
        from ..plugins.sandbox import with_sandbox_mode

        try:
            profile = with_sandbox_mode(profile, sandbox)
        except ValueError as exc:
            raise CliError(str(exc)) from None
    if workspace is not None and profile.row("mcp") is not None:
        profile = profile.with_config("mcp", workspace=str(workspace))
    return profile


async def sandbox_status(profile: Profile, workspace: Path) -> list[tuple[str, str]]:
    """What the profile's sandbox allows a session in `workspace` (rows for `dsh config show`),
    whether bubblewrap works here included; none without the row."""
    from ..plugins.sandbox import Sandbox, SandboxConfig, report

    row = profile.row("sandbox")
    if row is None or row.disabled:
        return []
    config = load_config(SandboxConfig, dict(row.config or {}))
    return await report(Sandbox(config), config.mode, str(workspace))


class Options(msgspec.Struct, frozen=True):
    """What `dsh run` and `dsh chat` share: the profile, the model, the workspace, the
    session to continue, approval and rendering."""

    profile: list[Path] | None = None
    model: str | None = None
    base_url: str | None = None
    provider: str | None = None
    cwd: Path | None = None
    resume: str | None = None
    latest: bool = False
    """`--continue`: resume the latest session of the workspace."""
    yes: bool = False
    plain: bool = False
    trust: bool = False
    """`--trust-workspace`: run the workspace's hooks (and MCP servers) for this run."""
    sandbox: str | None = None
    """`--sandbox MODE`: the sandbox row's mode."""
    otel: bool = False
    """`--otel`: OpenTelemetry traces and metrics (the otel row)."""


def prepare(options: Options) -> tuple[Profile, Route, Path]:
    """What can be checked before anything starts: the workspace, the profile, the route
    and its key."""
    cwd = workspace_dir(options.cwd)
    profile = build_profile(
        options.profile,
        yes=options.yes,
        trust_workspace=options.trust,
        sandbox=options.sandbox,
        workspace=cwd,
        otel=options.otel,
    )
    profile, route = resolve_route(profile, options.model, options.provider, options.base_url)
    return profile, route, cwd


def workspace_dir(cwd: Path | None) -> Path:
    """`--cwd` (else the current directory), resolved; it must be an existing directory."""
    path = (cwd or Path.cwd()).expanduser()
    if not path.exists():
        raise CliError(f"--cwd {path}: no such directory (create it, or pass an existing one)")
    if not path.is_dir():
        raise CliError(f"--cwd {path}: not a directory (pass the project's folder)")
    return path.resolve()


BASE_URL_ENV = {"deepseek-official": "DEEPSEEK_BASE_URL", "openai": "OPENAI_BASE_URL"}
"""The variable each built-in route reads its URL from."""


class Route(msgspec.Struct, frozen=True):
    """The model route of a command, and where its URL was set (to say what to change)."""

    route: ModelRoute
    url_from: str | None = None

    @property
    def provider(self) -> str:
        return self.route.provider

    @property
    def model(self) -> str:
        return self.route.model


def resolve_route(
    profile: Profile,
    model: str | None = None,
    provider: str | None = None,
    base_url: str | None = None,
    *,
    require_key: bool = True,
) -> tuple[Profile, Route]:
    """The route, and the profile that mounts it: `--model provider:model` (else
    `DSH_MODEL`), `--provider` with a bare model id (else `DSH_PROVIDER`), else the
    agent-loop row's route; `--base-url` overrides a built-in provider's URL. A route that
    needs a key which is not set stops here, before any model call."""
    from ..llm.adapters import RouteError, parse_model

    if base_url is not None:
        _check_url(base_url)
    spec = model_string(profile, model or os.environ.get("DSH_MODEL"), provider)
    try:
        route = parse_model(spec, base_url=base_url)
    except RouteError as exc:
        raise CliError(str(exc)) from None
    missing = route.missing_credential
    if missing is not None and require_key:
        raise CliError(
            f"no API key for {route.provider}: set {missing} (e.g. `export {missing}=sk-…`), "
            "or choose another model with --model provider:model (e.g. openai:qwen2.5-coder "
            "with --base-url for a local server)"
        )
    url_from = "--base-url" if base_url else BASE_URL_ENV.get(route.provider)
    return route.apply(profile), Route(route, url_from)


def _check_url(url: str) -> None:
    """A usage error, before anything starts, for a `--base-url` no request can go to."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise CliError(
            f"--base-url {url!r}: not an http:// or https:// URL (e.g. http://localhost:8000/v1)"
        )


def model_string(profile: Profile, model: str | None, provider: str | None) -> str:
    """The model string (`provider:model`) a run uses: `model` when it names its provider,
    else the provider (`provider`, `DSH_PROVIDER`, the agent-loop row's) and the model id."""
    provider = provider or os.environ.get("DSH_PROVIDER")
    if model is not None and ":" in model:
        if provider is not None:
            raise CliError(f"--model {model} already names its provider: leave out --provider")
        spec = model
    else:
        loop = profile.row("agent-loop")
        config = dict(loop.config or {}) if loop is not None else {}
        model_id = model or config.get("model") or DEFAULT_MODEL
        spec = f"{provider or config.get('provider') or DEFAULT_PROVIDER}:{model_id}"
    # The default profile names DeepSeek's route by its id; the model string says `deepseek:`.
    return "deepseek:" + spec.partition(":")[2] if spec.startswith("deepseek-official:") else spec


def turn_cost(ctx: Context, route: Route) -> Callable[[Usage], float | None] | None:
    """The cost of a turn's usage on `route` by the profile's prices (None: no usage row)."""
    from ..plugins.usage import PRICES

    prices = ctx.get(PRICES)
    if prices is None:
        return None
    key = (route.provider, route.model)
    return lambda usage: prices.cost({key: usage})


async def start_runtime(profile: Profile, route: Route) -> Context:
    ctx = await boot(profile)
    if not any(p.id == route.provider for p in ctx.llm.list_providers()):
        await ctx.owner.dispose()
        raise CliError(
            f'no adapter serves provider "{route.provider}": mount one in a profile '
            "(see `dsh config show`)"
        )
    # What imports and boot built lives as long as this process: moved out of the collector's
    # generations, the next full collections do not traverse it again (4% of `dsh run` N=1).
    settle_collector()
    return ctx


async def create_agent(ctx: Context, route: Route, cwd: Path) -> AgentHandle:
    """A new agent on a fresh session in `cwd` (an absolute, resolved path)."""
    return await ctx.agents.create(
        CreateAgentOptions(
            f"session-{uuid4_text()}",
            SessionMeta(cwd=str(cwd)),
            agent_options=AgentOptions(provider=route.provider, model=route.model),
        )
    )


async def resume_agent(ctx: Context, route: Route, session_id: str) -> AgentHandle:
    try:
        return await ctx.agents.resume(
            ResumeAgentOptions(
                session_id, agent_options=AgentOptions(provider=route.provider, model=route.model)
            )
        )
    except (KeyError, LookupError, FileNotFoundError) as exc:
        raise CliError(f"no session {session_id!r} to resume: {exc}") from None
    except CorruptLogError as exc:
        raise CliError(corrupt_log(exc, session_id)) from None
    except PersistenceError as exc:  # open in another process
        raise CliError(str(exc)) from None


def corrupt_log(exc: CorruptLogError, session_id: str) -> str:
    """The one line for a corrupt log: where and what, then what to do."""
    return f"{exc} (`dsh sessions repair {session_id}` keeps what is valid)"


def failure_advice(reason: Json, route: Route) -> str | None:
    """What to do about a turn that failed for a reason the user can fix: a refused key, or
    a model server that cannot be reached."""
    if not isinstance(reason, dict) or reason.get("kind") != "error":
        return None
    error = reason.get("error") or {}
    code, message = error.get("code"), str(error.get("message", ""))
    if code == "INVALID_CREDENTIAL":
        key = route.route.api_key_env
        if key is None and route.route.provider == "openai":  # sent whenever it is set
            return "→ the server wants an API key: set OPENAI_API_KEY"
        if key is None:
            return (
                "→ the server wants an API key: name the variable holding it in the "
                f"profile's {route.route.provider} route (api_key_env)"
            )
        return f"→ the server refused the API key: check {key}"
    unreachable = ("connection refused", "unknown host", "connection timed out", "cannot connect")
    reachable_codes = ("TRANSPORT", "TIMEOUT", "INVALID_REQUEST")  # (a local server: not retried)
    if code in reachable_codes and any(word in message for word in unreachable):
        where = route.url_from or "the profile's base_url"
        change = where if where == "--base-url" else f"{where} (or pass --base-url)"
        return f"→ no model server answers there: check {change}, or start the server"
    return None
