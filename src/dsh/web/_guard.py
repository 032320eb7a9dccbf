"""Who may talk to the web UI. Every request needs:

- a `Host` naming this server (a page on another name that resolves here — DNS rebinding —
  is refused);
- when it has an `Origin`, this server's own origin (no cross-site posts), and a JSON body
  for a POST (a plain HTML form cannot send one);
- the access token: the `token` query parameter of the printed URL (answered with a cookie
  and a redirect that drops it from the address bar), the cookie, or `Authorization: Bearer`.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Iterable
from urllib.parse import urlencode

from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["LOOPBACK_HOSTS", "Guard", "host_name"]

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})

NO_TOKEN = (
    "dsh: no valid access token: open the URL `dsh web` printed (it carries the token), or "
    "send Authorization: Bearer <token> (the token `dsh a2a` printed, or your --token-file's)\n"
)

SECURITY_HEADERS = [
    (
        b"content-security-policy",
        b"default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; "
        b"form-action 'none'; frame-ancestors 'none'",
    ),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"cache-control", b"no-store"),
]


def host_name(host: str) -> str:
    """The name part of a `Host` header (`[::1]:8000` → `::1`), lower-cased."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1 : host.find("]")] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


class Guard:
    """ASGI middleware in front of the whole app. `hosts` are the accepted `Host` names
    (None: any, for a server bound to every address, where the token alone guards it)."""

    def __init__(
        self,
        app: ASGIApp,
        token: str,
        hosts: Iterable[str] | None,
        public: frozenset[str] = frozenset(),
    ) -> None:
        self.app = app
        self.public = public
        """Paths a GET reaches without the token (an A2A agent card)."""
        self.token = token
        self.hosts = None if hosts is None else frozenset(h.lower() for h in hosts)
        digest = hashlib.sha256(token.encode()).hexdigest()[:12]
        self.cookie = f"dsh_web_{digest}"  # one per server: two servers never share one

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def secured(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", ()), *SECURITY_HEADERS]}
            await send(message)

        response = self._check(Request(scope))  # the request is not kept while the app runs
        if response is not None:
            await response(scope, receive, secured)
        else:
            await self.app(scope, receive, secured)

    def _check(self, request: Request) -> Response | None:
        """None when the request may go on; else the answer that refuses it."""
        public = request.method in ("GET", "HEAD") and request.url.path in self.public
        return self._refusal(request) or (None if public else self._login(request))

    def _refusal(self, request: Request) -> Response | None:
        headers = request.headers
        host = headers.get("host", "")
        if self.hosts is not None and host_name(host) not in self.hosts:
            return PlainTextResponse(f"dsh web: unexpected Host {host!r}\n", 403)
        origin = headers.get("origin")
        if origin is not None and origin != f"{request.url.scheme}://{host}":
            return PlainTextResponse("dsh web: cross-origin requests are refused\n", 403)
        if request.method not in ("GET", "HEAD", "POST"):
            return PlainTextResponse("dsh web: method not allowed\n", 405)
        if request.method == "POST" and not _is_json(headers):
            return PlainTextResponse("dsh web: POST a JSON body\n", 415)
        return None

    def _login(self, request: Request) -> Response | None:
        """None when the request carries the token; else the redirect that turns the URL's
        token into a cookie, or 401."""
        given = request.query_params.get("token")
        if given is not None and request.method == "GET" and self._valid(given):
            kept = [(k, v) for k, v in request.query_params.multi_items() if k != "token"]
            rest = urlencode(kept)
            location = request.url.path + (f"?{rest}" if rest else "")
            response = RedirectResponse(location, 303)
            response.set_cookie(self.cookie, self.token, httponly=True, samesite="strict")
            return response
        bearer = request.headers.get("authorization", "")
        if self._valid(request.cookies.get(self.cookie, "")) or (
            bearer.startswith("Bearer ") and self._valid(bearer[7:])
        ):
            return None
        return PlainTextResponse(NO_TOKEN, 401, {"www-authenticate": "Bearer"})

    def _valid(self, given: str) -> bool:
        return secrets.compare_digest(given.encode(), self.token.encode())


def _is_json(headers: Headers) -> bool:
    return headers.get("content-type", "").split(";")[0].strip() == "application/json"
