"""One path from a front door's decisions to a booted runtime: `assemble`, then `start`."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlsplit

from .._context import Context
from .._process import settle_collector
from ..llm.adapters import ROUTE_PREFIXES, RouteError, parse_model
from ..persistence import store_config
from ..plugins.sandbox import with_sandbox_mode
from ..plugins.usage import UsageLimits
from ..profiles import Profile, boot, load_profile, with_otel
from ._spec import Assembly, AssemblyError, Route, RuntimeSpec
from ._trust import local_layer, trust_for_run

__all__ = ["assemble", "model_string", "resolve_route", "start", "workspace_dir"]

DEFAULT_PROVIDER = "deepseek-official"
DEFAULT_MODEL = "deepseek-v4-flash"
BASE_URL_ENV = {"deepseek-official": "DEEPSEEK_BASE_URL", "openai": "OPENAI_BASE_URL"}
"""The variable each built-in route reads its URL from."""


def assemble(spec: RuntimeSpec) -> Assembly:
    """The profile `spec` asks for, checked before anything starts: the workspace, the
    layers (base, `dsh.yml`, files), tracing, approval, trust, the sandbox mode, the store,
    the model route and its key. Raises `AssemblyError` (or the profile's
    `CompositionError`) with one line."""
    where = Path(spec.workspace) if spec.workspace else None
    workspace = workspace_dir(where, spec.workspace_from)
    files = [Path(f) for f in spec.files]
    note = None
    if spec.local_profile:
        files, note = local_layer(files, spec.trust_workspace)
    profile = (load_profile() if spec.base is None else spec.base).with_files(files)
    profile = _decisions(profile, spec, workspace)
    route = None
    if spec.route:
        profile, route = resolve_route(
            profile, spec.model, spec.provider, spec.base_url, require_key=spec.require_key
        )
    notes = () if note is None else (note,)
    return Assembly(profile, route, workspace, tuple(str(f) for f in files), notes)


def _decisions(profile: Profile, spec: RuntimeSpec, workspace: Path) -> Profile:
    if spec.otel:
        profile = with_otel(profile)
    if spec.auto_approve:
        profile = profile.with_config("approval", auto_approve=True)
    if spec.trust_workspace:
        profile = trust_for_run(profile)
    if spec.sandbox is not None:
        try:
            profile = with_sandbox_mode(profile, spec.sandbox)
        except ValueError as exc:
            raise AssemblyError(str(exc)) from None
    if spec.store is not None:
        profile = profile.with_config("persistence", **store_config(spec.store))
    if profile.row("mcp") is not None:
        profile = profile.with_config("mcp", workspace=str(workspace))
    if spec.limits is not None and spec.limits.limits():
        profile = _with_limits(profile, spec.limits)
    return profile


def _with_limits(profile: Profile, limits: UsageLimits) -> Profile:
    """The usage row with `limits` over its own per-run ones."""
    row = profile.row("usage")
    if row is None:
        raise AssemblyError(
            "usage limits need the usage plugin: its row is off in this profile (turn it on)"
        )
    merged = dict((row.config or {}).get("limits") or {})
    for field in limits.__struct_fields__:
        value = getattr(limits, field)
        if value is not None:
            merged[field] = value
    if limits.max_steps is not None:
        merged.pop("max_turns", None)  # the profile's alias gives way too
    return profile.with_config("usage", limits=merged)


async def start(assembly: Assembly, *, root: Context | None = None) -> Context:
    """Boot `assembly`'s profile (into `root` when given); with a route, an adapter must
    serve its provider. The caller disposes `ctx.owner`."""
    ctx = await boot(assembly.profile, root=root)
    route = assembly.route
    served = [p.id for p in ctx.llm.list_providers()]
    if route is not None and route.provider not in served:
        await ctx.owner.dispose()
        builtin = ", ".join(f"{p}:MODEL" for p in ROUTE_PREFIXES)
        mounted = sorted(set(served) - {"deepseek-official"})
        routes = f", a route this profile mounts ({', '.join(mounted)})" if mounted else ""
        raise AssemblyError(
            f'no provider "{route.provider}": name one of {builtin}{routes}, or mount a '
            "route in a profile (see `dsh config show`)"
        )
    # What imports and boot built lives as long as this process: moved out of the collector's
    # generations, the next full collections do not traverse it again (4% of `dsh run` N=1).
    settle_collector()
    return ctx


def workspace_dir(cwd: Path | None, named: str = "--cwd") -> Path:
    """`cwd` (else the current directory), resolved; it must be an existing directory.
    `named` is how the user gave it (`--cwd`, `cwd=`), for the error."""
    path = (cwd or Path.cwd()).expanduser()
    if not path.exists():
        raise AssemblyError(
            f"{named} {path}: no such directory (create it, or pass an existing one)"
        )
    if not path.is_dir():
        raise AssemblyError(f"{named} {path}: not a directory (pass the project's folder)")
    return path.resolve()


def resolve_route(
    profile: Profile,
    model: str | None = None,
    provider: str | None = None,
    base_url: str | None = None,
    *,
    require_key: bool = True,
) -> tuple[Profile, Route]:
    """The route, and the profile that mounts it: `model` as `provider:model` (else
    `DSH_MODEL`), `provider` with a bare model id (else `DSH_PROVIDER`), else the
    agent-loop row's route; `base_url` overrides a built-in provider's URL. A route that
    needs a key which is not set stops here, before any model call."""
    if base_url is not None:
        _check_url(base_url)
    spec = model_string(profile, model or os.environ.get("DSH_MODEL"), provider)
    try:
        route = parse_model(spec, base_url=base_url)
    except RouteError as exc:
        raise AssemblyError(str(exc)) from None
    missing = route.missing_credential
    if missing is not None and require_key:
        raise AssemblyError(
            f"no API key for {route.provider}: set {missing} (e.g. `export {missing}=sk-…`), "
            "or choose another model with --model provider:model (e.g. openai:qwen2.5-coder "
            "with --base-url for a local server)"
        )
    url_from = "--base-url" if base_url else BASE_URL_ENV.get(route.provider)
    return route.apply(profile), Route(route, url_from)


def _check_url(url: str) -> None:
    """A usage error, before anything starts, for a `--base-url` no request can go to."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise AssemblyError(
            f"--base-url {url!r}: not an http:// or https:// URL (e.g. http://localhost:8000/v1)"
        )


def model_string(profile: Profile, model: str | None, provider: str | None) -> str:
    """The model string (`provider:model`) a run uses: `model` when it names its provider,
    else the provider (`provider`, `DSH_PROVIDER`, the agent-loop row's) and the model id."""
    provider = provider or os.environ.get("DSH_PROVIDER")
    if model is not None and ":" in model:
        if provider is not None:
            raise AssemblyError(f"--model {model} already names its provider: leave out --provider")
        spec = model
    else:
        loop = profile.row("agent-loop")
        config = dict(loop.config or {}) if loop is not None else {}
        model_id = model or config.get("model") or DEFAULT_MODEL
        spec = f"{provider or config.get('provider') or DEFAULT_PROVIDER}:{model_id}"
    # The default profile names DeepSeek's route by its id; the model string says `deepseek:`.
    return "deepseek:" + spec.partition(":")[2] if spec.startswith("deepseek-official:") else spec
