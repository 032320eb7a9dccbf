"""`web_fetch`: one web page for the model, as Markdown, through an SSRF guard (addresses
checked after DNS resolution, on every redirect); it asks for approval by default."""

from ._fetch import FetchError
from ._guard import AddressRefused, HostRules
from ._plugin import WebFetchConfig, WebFetchPlugin, render_fetch, web_fetch_tool

__all__ = [
    "AddressRefused",
    "FetchError",
    "HostRules",
    "WebFetchConfig",
    "WebFetchPlugin",
    "render_fetch",
    "web_fetch_tool",
]
