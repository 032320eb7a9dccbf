"""`web_fetch`: one web page for the model, as Markdown, through an SSRF guard (addresses
checked after DNS resolution, on every redirect); it asks for approval by default. httpx
and markdownify load on the first fetch."""

from ._plugin import WebFetchConfig, WebFetchPlugin, render_fetch, web_fetch_tool
from ._policy import HostRules

__all__ = [
    "HostRules",
    "WebFetchConfig",
    "WebFetchPlugin",
    "render_fetch",
    "web_fetch_tool",
]
