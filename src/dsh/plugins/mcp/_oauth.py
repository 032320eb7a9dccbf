"""OAuth 2.1 for remote MCP servers on the SDK's client auth (`mcp.client.auth`): tokens in
the server's file (`_auth_store`), refreshed ahead of expiry and after a 401; a login that
is not possible here (a runtime with nobody at the browser) fails with `LoginRequired`."""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator
from typing import Protocol

import httpx2
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider
from mcp.shared.auth import (
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthMetadata,
    OAuthToken,
)
from pydantic import ValidationError

from ._auth_store import LoginRequired, edit_auth, read_auth
from ._config import ServerSpec

__all__ = ["REFRESH_AHEAD_S", "Authorizer", "LoginCheck", "McpOAuth", "TokenFile"]

REFRESH_AHEAD_S = 60.0
"""An access token this close to its expiry is refreshed before the request."""
_NO_REDIRECT = "http://127.0.0.1/callback"


class Authorizer(Protocol):
    """An interactive authorization: where the browser is sent back to (`redirect_uri`),
    how the URL is shown or opened (`open`), and how the redirect's code arrives (`wait`)."""

    @property
    def redirect_uri(self) -> str: ...

    async def open(self, url: str) -> None: ...

    async def wait(self) -> AuthorizationCodeResult: ...


class LoginCheck(httpx2.Auth):
    """A server not logged in to: requests go as they are (no lock, nothing buffered), and
    a 401 says that a login is needed."""

    def __init__(self, spec: ServerSpec) -> None:
        self._name = spec.name

    async def async_auth_flow(
        self, request: httpx2.Request
    ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        response = yield request
        if response.status_code == 401:
            raise LoginRequired(self._name)


class TokenFile:
    """The SDK's `TokenStorage` on the server's file in the dsh home."""

    def __init__(self, spec: ServerSpec) -> None:
        self._spec = spec

    async def get_tokens(self) -> OAuthToken | None:
        data = read_auth(self._spec)
        try:
            token = OAuthToken.model_validate(data.get("tokens"))
        except ValidationError:
            return None
        expires_at = data.get("expiresAt")
        if isinstance(expires_at, int | float):
            token.expires_in = int(expires_at - time.time())  # what is left of it
        return token

    async def set_tokens(self, tokens: OAuthToken) -> None:
        expires_at = None if tokens.expires_in is None else time.time() + int(tokens.expires_in)
        stored = tokens.model_dump(mode="json", exclude_none=True)
        edit_auth(self._spec, lambda d: d.update(tokens=stored, expiresAt=expires_at))

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        try:
            return OAuthClientInformationFull.model_validate(read_auth(self._spec).get("client"))
        except ValidationError:
            return None

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        stored = client_info.model_dump(mode="json", exclude_none=True)
        edit_auth(self._spec, lambda d: d.update(client=stored))

    def metadata(self) -> OAuthMetadata | None:
        try:
            return OAuthMetadata.model_validate(read_auth(self._spec).get("metadata"))
        except ValidationError:
            return None

    def set_metadata(self, metadata: OAuthMetadata | None) -> None:
        if metadata is not None:
            stored = metadata.model_dump(mode="json", exclude_none=True)
            edit_auth(self._spec, lambda d: d.update(metadata=stored))

    def redirect_uri(self) -> str | None:
        """The loopback redirect the stored client was registered with."""
        client = read_auth(self._spec).get("client")
        uris = client.get("redirect_uris") if isinstance(client, dict) else None
        return str(uris[0]) if isinstance(uris, list) and uris else None


class McpOAuth(OAuthClientProvider):
    """The SDK's provider, plus: expiry and the authorization server's endpoints survive a
    restart (the stored record), a token is refreshed `REFRESH_AHEAD_S` before it expires,
    and a 401 is first answered with a refresh. Without an `Authorizer` a login that is
    still needed raises `LoginRequired` (no client is registered for nothing)."""

    def __init__(self, spec: ServerSpec, authorizer: Authorizer | None = None) -> None:
        assert spec.url is not None
        self._tokens = TokenFile(spec)
        self._spec = spec
        self._authorizer = authorizer
        redirect = authorizer.redirect_uri if authorizer else self._tokens.redirect_uri()
        super().__init__(
            spec.url,
            OAuthClientMetadata(
                client_name="dsh",
                redirect_uris=[redirect or _NO_REDIRECT],  # type: ignore[list-item]
                grant_types=["authorization_code", "refresh_token"],
                token_endpoint_auth_method="none",
            ),
            self._tokens,
            redirect_handler=authorizer.open if authorizer else None,
            callback_handler=authorizer.wait if authorizer else None,
        )

    @property
    def logged_in(self) -> bool:
        return self.context.current_tokens is not None

    async def _initialize(self) -> None:
        await super()._initialize()
        if self.context.current_tokens is not None:
            self.context.update_token_expiry(self.context.current_tokens)
        if self.context.oauth_metadata is None:
            self.context.oauth_metadata = self._tokens.metadata()

    async def _handle_token_response(self, response: httpx2.Response) -> None:
        await super()._handle_token_response(response)
        self._tokens.set_metadata(self.context.oauth_metadata)

    async def _auth_flow(
        self, request: httpx2.Request
    ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        if not self._initialized:
            await self._initialize()
        self._refresh_ahead()
        flow = super()._auth_flow(request)
        answered = False
        try:
            outgoing = await flow.__anext__()
            while True:
                response = yield outgoing
                if outgoing is request and response.status_code == 401 and not answered:
                    answered = True
                    if self.context.can_refresh_token():
                        refreshed = yield await self._refresh_token()
                        if await self._handle_refresh_response(refreshed):
                            self._add_auth_header(request)
                            response = yield request
                    if response.status_code == 401 and self._authorizer is None:
                        raise LoginRequired(self._spec.name)
                outgoing = await flow.asend(response)
        except StopAsyncIteration:
            return
        finally:
            await flow.aclose()

    def _refresh_ahead(self) -> None:
        expiry = self.context.token_expiry_time
        now = time.time()
        if (
            expiry is not None
            and expiry - now < REFRESH_AHEAD_S
            and self.context.can_refresh_token()
        ):
            self.context.token_expiry_time = now - 1  # the SDK refreshes an expired token
