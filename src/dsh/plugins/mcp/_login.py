"""`dsh mcp login` / `logout`: the interactive OAuth authorization of a remote MCP server.

The browser comes back to a loopback listener on 127.0.0.1 (a random port, kept while the
registered client lives); the URL is also printed, and on a machine without a browser the
address the browser ended on can be pasted back instead."""

from __future__ import annotations

import asyncio
import threading
import webbrowser
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from http.server import BaseHTTPRequestHandler, HTTPServer
from urllib.parse import parse_qs, urlsplit

import httpx
from mcp.client.auth import AuthorizationCodeResult, OAuthFlowError

from ...kernel import Aborted, CancelSignal
from ...llm import Json
from ._auth_store import edit_auth, forget_auth, read_auth, uses_oauth
from ._config import ServerSpec
from ._oauth import McpOAuth, TokenFile

__all__ = ["LoginError", "LoopbackLogin", "login", "logout", "open_in_browser"]

LOGIN_TIMEOUT_S = 300.0
"""How long a login waits for the browser (or a pasted address)."""
_TOKENS = ("tokens", "expiresAt")
Show = Callable[[str], None]
Browser = Callable[[str], Awaitable[object]]
_DONE_PAGE = b"<!doctype html><title>dsh</title><p>Logged in. You can close this tab.</p>"


class LoginError(Exception):
    """A login that cannot be done; the message is one line for the user."""


async def open_in_browser(url: str) -> bool:
    """The system's browser (`$BROWSER` honoured), off the event loop: whether one opened."""
    return await asyncio.to_thread(webbrowser.open, url)


class LoopbackLogin:
    """The SDK's redirect and callback handlers: shows (and opens) the authorization URL,
    then waits for the browser's redirect to the loopback listener, or a pasted URL."""

    def __init__(
        self, server: str, show: Show, browser: Browser | None, pasted: Awaitable[str] | None
    ) -> None:
        self._server = server
        self._show = show
        self._browser = browser
        self._pasted = pasted
        self._loop = asyncio.get_running_loop()
        self._arrived: asyncio.Future[str] = self._loop.create_future()
        self._http: HTTPServer | None = None

    @property
    def redirect_uri(self) -> str:
        assert self._http is not None
        return f"http://127.0.0.1:{self._http.server_address[1]}/callback"

    def listen(self, port: int) -> None:
        login = self

        class Callback(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if urlsplit(self.path).path != "/callback":
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.end_headers()
                self.wfile.write(_DONE_PAGE)
                login._loop.call_soon_threadsafe(login._arrive, self.path)

            def log_message(self, format: str, *args: object) -> None:
                return  # the query carries the code: not for a log

        self._http = HTTPServer(("127.0.0.1", port), Callback)
        threading.Thread(target=self._http.serve_forever, daemon=True, name="dsh-mcp-login").start()

    def close(self) -> None:
        if self._http is not None:
            self._http.shutdown()
            self._http.server_close()

    def _arrive(self, path: str) -> None:
        if not self._arrived.done():
            self._arrived.set_result(path)

    async def open(self, url: str) -> None:
        self._show(f"Log in to {self._server} in your browser: {url}")
        opened = self._browser is not None and await self._browser(url)
        if self._pasted is not None:
            self._show(
                "Or paste the address your browser ends on (http://127.0.0.1:…/callback?code=…):"
            )
        elif not opened:
            self._show("Open that address on this machine to finish.")

    async def wait(self) -> AuthorizationCodeResult:
        try:
            async with asyncio.timeout(LOGIN_TIMEOUT_S):
                address = await self._first_address()
        except TimeoutError:
            minutes = f"{LOGIN_TIMEOUT_S / 60:g} minutes"
            raise LoginError(f"the browser did not come back within {minutes}") from None
        return _code(address)

    async def _first_address(self) -> str:
        """The browser's redirect or the pasted address, whichever comes first (the other
        one is then cancelled)."""
        if self._pasted is None:
            return await self._arrived
        came_back = CancelSignal()
        self._arrived.add_done_callback(lambda _: came_back.abort("the browser came back"))
        try:
            return await came_back.race(self._pasted)
        except Aborted:
            return self._arrived.result()


def _code(address: str) -> AuthorizationCodeResult:
    query = parse_qs(urlsplit(address.strip()).query)
    if "error" in query:
        why = query.get("error_description", query["error"])[0]
        raise LoginError(f"the authorization server refused: {why}")
    if "code" not in query:
        raise LoginError("that address has no ?code=…: paste the whole address from the browser")
    first = {key: values[0] for key, values in query.items()}
    return AuthorizationCodeResult(
        code=first["code"], state=first.get("state"), iss=first.get("iss")
    )


@asynccontextmanager
async def loopback(
    spec: ServerSpec, show: Show, browser: Browser | None, pasted: Awaitable[str] | None
) -> AsyncIterator[LoopbackLogin]:
    """A listener on the port of the stored client's redirect (a new one if that is taken:
    the client is then registered again)."""
    login = LoopbackLogin(spec.name, show, browser, pasted)
    stored = TokenFile(spec).redirect_uri()
    port = urlsplit(stored).port if stored else None
    try:
        login.listen(port or 0)
    except OSError:
        login.listen(0)
    if stored is not None and stored != login.redirect_uri:
        _drop(spec, "client")  # registered for another port: register again
    try:
        yield login
    finally:
        login.close()


async def login(
    spec: ServerSpec,
    show: Show,
    *,
    browser: Browser | None = open_in_browser,
    pasted: Awaitable[str] | None = None,
) -> bool:
    """Authorize dsh at `spec`'s server and store its tokens: whether the server asked for a
    login at all (False: it lets dsh in without one). Raises `LoginError`."""
    from ._transport import open_session

    if not uses_oauth(spec):
        raise LoginError(_no_oauth(spec))
    kept = {k: v for k, v in read_auth(spec).items() if k in _TOKENS}
    _drop(spec, *_TOKENS)  # a login starts clean (the registered client stays)
    async with loopback(spec, show, browser, pasted) as authorizer:
        auth = McpOAuth(spec, authorizer)
        try:
            async with open_session(spec, auth=auth) as session:
                await session.tools()
        except Exception as exc:
            raise LoginError(f"cannot log in to {spec.name}: {_reason(exc)}") from None
        finally:  # failed, cancelled or interrupted (Ctrl-C): the old tokens stay
            if kept and not auth.logged_in:
                edit_auth(spec, lambda data: data.update(kept))
    return auth.logged_in


def _drop(spec: ServerSpec, *keys: str) -> None:
    def drop(data: dict[str, Json]) -> None:
        for key in keys:
            data.pop(key, None)

    if any(key in read_auth(spec) for key in keys):
        edit_auth(spec, drop)


async def logout(spec: ServerSpec) -> str:
    """Revoke the stored tokens where the server offers revocation (RFC 7009), then delete
    them: one line saying what was done."""
    if spec.transport == "stdio":
        raise LoginError(_no_oauth(spec))
    data = read_auth(spec)
    tokens = data.get("tokens")
    if not isinstance(tokens, dict):
        forget_auth(spec)
        return f"not logged in to {spec.name}"
    endpoint = _revocation_endpoint(data)
    revoked = endpoint is not None and await _revoke(endpoint, tokens, data.get("client"))
    forget_auth(spec)
    if revoked:
        return f"logged out of {spec.name}: tokens revoked and deleted"
    return f"logged out of {spec.name}: tokens deleted (the server did not revoke them)"


def _revocation_endpoint(data: dict[str, Json]) -> str | None:
    metadata = data.get("metadata")
    endpoint = metadata.get("revocation_endpoint") if isinstance(metadata, dict) else None
    return endpoint if isinstance(endpoint, str) else None


async def _revoke(endpoint: str, tokens: dict[str, Json], client: Json) -> bool:
    """RFC 7009 for each token, authenticated the way the client was registered. A public
    client sends an empty `client_secret` (RFC 6749 §2.3.1 treats it as absent; the SDK's
    revocation endpoint wants the field)."""
    client = client if isinstance(client, dict) else {}
    client_id, secret = str(client.get("client_id", "")), str(client.get("client_secret") or "")
    form, auth = {"client_id": client_id, "client_secret": secret}, None
    if client.get("token_endpoint_auth_method") == "client_secret_basic":
        form, auth = {"client_id": client_id}, httpx.BasicAuth(client_id, secret)
    ok = True
    async with httpx.AsyncClient(timeout=30, auth=auth) as http:
        for kind in ("refresh_token", "access_token"):
            token = tokens.get(kind)
            if not isinstance(token, str):
                continue
            try:
                answer = await http.post(
                    endpoint, data={**form, "token": token, "token_type_hint": kind}
                )
            except httpx.HTTPError:
                return False
            ok = ok and answer.status_code == 200
    return ok


def _no_oauth(spec: ServerSpec) -> str:
    if spec.transport == "stdio":
        return f"{spec.name} is a stdio server: it has no login (its env passes credentials)"
    if not spec.oauth:
        return f'{spec.name} has "oauth": false in {spec.source}'
    return f"{spec.name} sends its own Authorization header ({spec.source}): it has no login"


def _reason(exc: BaseException) -> str:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, LoginError | OAuthFlowError):
        return str(exc)
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
