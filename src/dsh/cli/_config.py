"""`dsh config show`: the settings in effect for this workspace — the model route, where
it is reached, timeouts and retries, approval, compaction, sessions — then the plugin rows,
with every secret masked."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..assembly import Route, RuntimeSpec
from ..llm import expect
from ..profiles import prepare
from ._runtime import assembled, folder, layers, sandbox_status

SECRET_WORDS = ("key", "token", "secret", "password", "authorization")
MASK = "***"


async def show_config(
    profile_files: list[Path] | None, cwd: Path | None, model: str | None, base_url: str | None
) -> int:
    import yaml

    assembly = assembled(
        RuntimeSpec(
            workspace=folder(cwd),
            files=layers(profile_files),
            local_profile=True,
            model=model,
            base_url=base_url,
            require_key=False,
        )
    )
    profile, route, workspace = assembly.profile, assembly.route, assembly.workspace
    assert route is not None
    prepared = {item.row.id: item for item in prepare(profile)}
    print(f"# effective settings for {workspace}")
    rows = [*effective_settings(prepared, route), *permissions(workspace)]
    rows += await sandbox_status(profile, workspace)
    for name, value in rows:
        print(f"{name + ':':<14} {value}")
    print(f"# layers: {', '.join(profile.sources) or '(none)'}")
    print(yaml.safe_dump(mask(profile.to_data()), sort_keys=False).rstrip() or "[]")
    return 0


def effective_settings(prepared: Mapping[str, object], route: Route) -> list[tuple[str, str]]:
    rows = [("model", f"{route.provider} / {route.model}")]
    rows += _endpoint_rows(prepared, route.provider)
    approval = getattr(prepared.get("approval"), "config", None)
    if approval is not None:
        rows.append(("approval", _policy(approval)))
    compaction = getattr(prepared.get("compaction"), "config", None)
    if compaction is not None:
        rows.append(
            (
                "compaction",
                f"at {compaction.threshold_ratio:.0%} of the context window, keeping "
                f"{compaction.retain_ratio:.0%} of it verbatim",
            )
        )
    persistence = getattr(prepared.get("persistence"), "config", None)
    if persistence is not None:
        from ..persistence import describe_store

        rows.append(("sessions", describe_store(persistence)))
    return rows


def permissions(workspace: Path) -> list[tuple[str, str]]:
    """The `permissions` rules of the workspace's settings files, each with its file and
    whether it applies (a workspace's own files only once it is trusted)."""
    from ..workspace import SettingsError, load_settings

    try:
        settings = load_settings(workspace)
    except SettingsError as exc:
        return [("permissions", f"unreadable: {exc}")]
    rows = []
    for layer in settings.layers:
        found = layer.data.get("permissions")
        if not isinstance(found, dict):
            continue
        state = "trusted" if layer.trusted else "ignored until the workspace is trusted"
        for kind in ("allow", "ask", "deny"):
            for rule in expect(found.get(kind) or [], list):
                rows.append(("permissions", f"{kind} {rule}  ({layer.source.path}, {state})"))
    return rows


def _endpoint_rows(prepared: Mapping[str, object], provider: str) -> list[tuple[str, str]]:
    for item in prepared.values():
        for endpoint in _endpoints(item):
            if endpoint.provider != provider:
                continue
            key = endpoint.api_key_env
            state = (
                "none sent"
                if key is None
                else f"${key} ({'set' if os.environ.get(key) else 'not set'})"
            )
            retry = endpoint.retry_policy
            return [
                ("endpoint", endpoint.url),
                ("api key", state),
                (
                    "timeouts",
                    f"connect {endpoint.connect_timeout_s:g} s, idle {endpoint.idle_timeout_s:g} s",
                ),
                (
                    "retries",
                    f"{retry.mode}, up to {retry.max_retries}, "
                    f"{retry.base_delay_ms / 1000:g} to {retry.max_delay_ms / 1000:g} s apart",
                ),
            ]
    return [("endpoint", f"(no mounted adapter serves {provider!r})")]


def _endpoints(item: Any) -> list[Any]:
    """The routes a prepared adapter row would serve."""
    config = item.config
    endpoint = getattr(item.plugin, "endpoint", None)
    if callable(endpoint):
        return [endpoint(config)]
    routes = getattr(config, "routes", None)
    return [route.endpoint() for route in routes] if isinstance(routes, list) else []


def _policy(config: Any) -> str:
    groups: dict[str, list[str]] = {}
    for rule in (*config.policy, *config.default_policy):
        groups.setdefault(rule.action, []).append(rule.tool)
    parts = [f"{action} {', '.join(tools)}" for action, tools in groups.items()]
    parts.append(f"otherwise {config.unmatched}")
    if config.auto_approve:
        parts.append("asks approved (--yes)")
    return "; ".join(parts)


def mask(value: object, key: str = "") -> object:
    """`value` with the values of secret-looking keys replaced by `***`."""
    if isinstance(value, dict):
        return {k: mask(v, str(k)) for k, v in value.items()}
    if isinstance(value, list):
        return [mask(v, key) for v in value]
    lowered = key.lower()
    secret = any(word in lowered for word in SECRET_WORDS) and not lowered.endswith("_env")
    return MASK if secret and isinstance(value, str) and value else value
