"""What the CLI commands share: the profile, the route, the runtime and its agents."""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass
from pathlib import Path

from ..agent import AgentHandle, AgentOptions, CreateAgentOptions, ResumeAgentOptions
from ..kernel import Context, Profile, boot, load_profile
from ..persistence import CorruptLogError, PersistenceError
from ..session import SessionMeta

DEFAULT_PROVIDER = "deepseek-official"
DEFAULT_MODEL = "deepseek-v4-flash"
CREDENTIAL_ENV = {"deepseek-official": "DEEPSEEK_API_KEY"}


class CliError(Exception):
    """A problem the user can fix; printed without a traceback, exit code 2."""


def profile_files(extra: list[Path] | None) -> list[Path]:
    """`./dsh.yml` when present, then each `--profile` file, in order."""
    files: list[Path] = []
    local = Path("dsh.yml")
    if local.is_file():
        files.append(local)
    files.extend(extra or [])
    return files


def build_profile(
    extra: list[Path] | None,
    *,
    yes: bool = False,
    trust_workspace: bool = False,
    sandbox: str | None = None,
) -> Profile:
    profile = load_profile(profile_files(extra))
    if yes:
        profile = profile.with_config("approval", auto_approve=True)
    if trust_workspace:
        from ._hooks import trust_for_run

        profile = trust_for_run(profile)
    if sandbox is not None:
        row = profile.row("sandbox")
        if row is None or row.disabled:
            raise CliError("--sandbox needs the sandbox plugin: the profile has no `sandbox` row")
        profile = profile.with_config("sandbox", mode=sandbox)
    return profile


def sandbox_status(profile: Profile) -> str | None:
    """`sandbox: <mode> (…)` for the profile's sandbox row, saying whether bubblewrap works
    here; None without the row."""
    import asyncio

    from ..plugins.sandbox import SandboxConfig, probe

    row = profile.row("sandbox")
    if row is None or row.disabled:
        return None
    config = SandboxConfig.model_validate(dict(row.config or {}))
    if config.mode == "danger-full-access":
        return "sandbox: danger-full-access (commands run unconfined)"
    why = asyncio.run(probe(config.bwrap, network=config.network))
    network = "network allowed" if config.network else "no network"
    if why is None:
        return f"sandbox: {config.mode}, {network} (bubblewrap works here)"
    return f"sandbox: {config.mode} — {why}: every bash call will ask for approval"


@dataclass(frozen=True, slots=True)
class Route:
    provider: str
    model: str


def resolve_route(profile: Profile, provider: str | None, model: str | None) -> Route:
    """`--provider/--model`, else `DSH_PROVIDER/DSH_MODEL`, else the agent-loop row's
    defaults, else DeepSeek."""
    loop = profile.row("agent-loop")
    config = dict(loop.config or {}) if loop is not None else {}
    return Route(
        provider or os.environ.get("DSH_PROVIDER") or config.get("provider") or DEFAULT_PROVIDER,
        model or os.environ.get("DSH_MODEL") or config.get("model") or DEFAULT_MODEL,
    )


def check_credentials(route: Route) -> None:
    env = CREDENTIAL_ENV.get(route.provider)
    if env is not None and not os.environ.get(env):
        raise CliError(
            f"no model configured: {route.provider} needs an API key. Set {env} "
            f"(e.g. `export {env}=sk-…`), or choose another provider with --provider and a "
            "profile that mounts it (see `dsh config show`)."
        )


async def start_runtime(profile: Profile, route: Route) -> Context:
    ctx = await boot(profile)
    if not any(p.id == route.provider for p in ctx.llm.list_providers()):
        await ctx.owner.dispose()
        raise CliError(
            f'no adapter serves provider "{route.provider}": mount one in a profile '
            "(see `dsh config show`)"
        )
    return ctx


async def create_agent(ctx: Context, route: Route, cwd: Path) -> AgentHandle:
    """A new agent on a fresh session in `cwd` (an absolute, resolved path)."""
    return await ctx.agents.create(
        CreateAgentOptions(
            f"session-{uuid.uuid4()}",
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
