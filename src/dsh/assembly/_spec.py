"""What a front door decides about the runtime it boots, and what assembling it gives."""

from __future__ import annotations

from pathlib import Path

import msgspec

from ..llm.adapters import ModelRoute
from ..plugins.usage import UsageLimits
from ..profiles import Profile

__all__ = ["Assembly", "AssemblyError", "Route", "RuntimeSpec"]


class AssemblyError(ValueError):
    """A problem the user can fix in what they asked for (a folder, a model route, a sandbox
    mode): one line naming it and what to do. (A profile file's is `CompositionError`.)"""


class RuntimeSpec(msgspec.Struct, frozen=True, kw_only=True):
    """Every decision a front door makes about its runtime, as plain values (a batch sends
    it to Ray workers). `assemble` applies them in one fixed order."""

    workspace: str | None = None
    """The agents' folder (None: the current directory); it must exist. The mcp row reads
    its `.mcp.json`."""
    workspace_from: str = "--cwd"
    """How the user named the workspace, for the error when it is not a folder."""
    base: Profile | None = None
    """The rows to start from (None: the default profile, with tracing when `DSH_OTEL` asks)."""
    files: tuple[str, ...] = ()
    """Profile files layered over the base, in order."""
    local_profile: bool = False
    """Layer the current folder's `dsh.yml` first, once its folder is trusted (or for this
    run with `trust_workspace`); skipped, `Assembly.notes` says why."""
    trust_workspace: bool = False
    """Run the workspace's own hooks and MCP servers for this run (nothing is recorded)."""
    auto_approve: bool = False
    """Approve every ask of the approval policy (its allow and deny rules still hold)."""
    sandbox: str | None = None
    """The sandbox row's mode (None: the profile's)."""
    otel: bool = False
    """Add OpenTelemetry traces and metrics (the otel row)."""
    store: str | None = None
    """The session store (`postgresql://…`, `sqlite:PATH`, a JSONL root; None: the profile's)."""
    route: bool = True
    """Resolve a model route and mount it (False: agents name their own, per request)."""
    model: str | None = None
    """`provider:model`, or a bare model id (None: `DSH_MODEL`, else the profile's)."""
    provider: str | None = None
    """The provider of a bare model id (None: `DSH_PROVIDER`, else the profile's)."""
    base_url: str | None = None
    """A built-in provider's server (any OpenAI-compatible one)."""
    require_key: bool = True
    """Refuse a route whose API key is not set, before anything starts."""
    limits: UsageLimits | None = None
    """Per-run usage limits (the CLI's `--max-steps`, …), over the usage row's `limits`."""


class Route(msgspec.Struct, frozen=True):
    """The model route of a runtime, and where its URL was set (to say what to change)."""

    route: ModelRoute
    url_from: str | None = None

    @property
    def provider(self) -> str:
        return self.route.provider

    @property
    def model(self) -> str:
        return self.route.model


class Assembly(msgspec.Struct, frozen=True):
    """The profile to boot, its route (None with `route=False`), the workspace, the profile
    files layered (`./dsh.yml` first when it was read), and one-line notes for the user (a
    `dsh.yml` skipped until trusted)."""

    profile: Profile
    route: Route | None
    workspace: Path
    files: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
