"""The web UI (`dsh web`): chat with live tool activity, approvals in the browser and a
session browser, served by Starlette + uvicorn (the `dsh[web]` extra) from a static page
shipped in this package. An entry point: it translates HTTP to `ctx.agents`, the session
log (as `dsh.events`) and the approval answerer."""

from .._lazy import extra_hint

try:
    import starlette  # noqa: F401
    import uvicorn  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the installation
    raise ImportError(f"the web UI needs dsh's web extra: {extra_hint('web')}") from exc

from ._app import DoorFactory, WebConfig, WebUI
from ._diff import FileSnapshots
from ._doors import Door, LazyDoor
from ._guard import LOOPBACK_HOSTS
from ._render import LogView, page_event
from ._serve import bind, serve

__all__ = [
    "LOOPBACK_HOSTS",
    "Door",
    "DoorFactory",
    "FileSnapshots",
    "LazyDoor",
    "LogView",
    "WebConfig",
    "WebUI",
    "bind",
    "page_event",
    "serve",
]
