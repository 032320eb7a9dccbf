"""What the CLI commands share: their options as a runtime spec (assembled by
`dsh.assembly`, the one path every front door takes), and the runtime's agents."""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from pathlib import Path

import msgspec

from .._context import Context
from .._ids import uuid4_text
from ..agent import Agent, AgentHandle, AgentOptions, CreateAgentOptions, ResumeAgentOptions
from ..assembly import Assembly, Route, RuntimeSpec, assemble
from ..events import TurnEndReason
from ..kernel import load_config
from ..persistence import CorruptLogError, PersistenceError
from ..plugins.usage import UsageLimits
from ..profiles import Profile
from ..session import ModelRoute, SessionMeta, Usage, session_usage


class CliError(Exception):
    """A problem the user can fix; printed as one line without a traceback, exit code 2."""


def assembled(spec: RuntimeSpec) -> Assembly:
    """`assemble(spec)`, its notes printed on stderr (`dsh: note: …`)."""
    assembly = assemble(spec)
    for note in assembly.notes:
        print(f"dsh: note: {note}", file=sys.stderr)
    return assembly


def layers(profile: list[Path] | None) -> tuple[str, ...]:
    """A command's `--profile` files as a spec's `files` (after `./dsh.yml`, once trusted,
    with `local_profile=True`)."""
    return tuple(str(p) for p in profile or ())


def folder(cwd: Path | None) -> str | None:
    """`--cwd` as a spec's `workspace` (None: the current directory)."""
    return None if cwd is None else str(cwd)


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
    limits: UsageLimits | None = None
    """`--max-steps`, `--max-cost`, …: per-run limits over the profile's."""


def prepare(options: Options) -> tuple[Assembly, Route]:
    """What can be checked before anything starts: the workspace, the profile, the route
    and its key."""
    assembly = assembled(
        RuntimeSpec(
            workspace=folder(options.cwd),
            files=layers(options.profile),
            local_profile=True,
            trust_workspace=options.trust,
            auto_approve=options.yes,
            sandbox=options.sandbox,
            otel=options.otel,
            model=options.model,
            provider=options.provider,
            base_url=options.base_url,
            limits=options.limits,
        )
    )
    assert assembly.route is not None  # the spec asks for one
    return assembly, assembly.route


Pricer = Callable[[Mapping[ModelRoute, Usage]], float | None]
"""The cost of usage by route (each route priced as itself, cache hits as hits)."""


def pricer(ctx: Context) -> Pricer | None:
    """The profile's prices (None: no usage row)."""
    from ..plugins.usage import PRICES

    prices = ctx.get(PRICES)
    return None if prices is None else prices.cost


def session_cost(ctx: Context, agent: Callable[[], Agent | None]) -> Callable[[], float | None]:
    """What the session of `agent()` cost so far, by the profile's prices (None: unpriced)."""
    price = pricer(ctx)

    def cost() -> float | None:
        current = agent()
        if price is None or current is None:
            return None
        return price(session_usage(current.session).by_model)

    return cost


async def create_agent(
    ctx: Context, route: Route, cwd: Path, *, stored_from_first_turn: bool = False
) -> AgentHandle:
    """A new agent on a fresh session in `cwd` (an absolute, resolved path); with
    `stored_from_first_turn`, one closed before any turn leaves nothing stored."""
    return await ctx.agents.create(
        CreateAgentOptions(
            f"session-{uuid4_text()}",
            SessionMeta(cwd=str(cwd)),
            agent_options=AgentOptions(provider=route.provider, model=route.model),
            stored_from_first_turn=stored_from_first_turn,
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


def failure_advice(reason: TurnEndReason | None, route: Route) -> str | None:
    """What to do about a turn that failed for a reason the user can fix: a refused key, or
    a model server that cannot be reached."""
    if reason is None or reason.kind != "error" or reason.error is None:
        return None
    code, message = reason.error.code, reason.error.message
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
    reachable_codes = ("TRANSPORT", "TIMEOUT", "UNREACHABLE")
    if code in reachable_codes and any(word in message for word in unreachable):
        where = route.url_from or "the profile's base_url"
        change = where if where == "--base-url" else f"{where} (or pass --base-url)"
        return f"→ no model server answers there: check {change}, or start the server"
    return None
