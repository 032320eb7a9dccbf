"""An OAuth-protected MCP server for the tests, built with the SDK's server auth
(`mcp.server.auth`): authorization server (metadata, dynamic registration, PKCE, refresh,
revocation) and resource server in one app on 127.0.0.1. The consent step approves at once:
`GET /authorize` redirects straight back with a code. `python -m tests.plugins.mcp.oauth_server
[http|sse]` prints its MCP URL on the first stdout line.

Test controls (no auth): `POST /test/expire` invalidates every access token (the next MCP
request gets a 401); `GET /test/state` counts authorizations, refreshes, live tokens, and
revocations, and lists the access tokens issued."""

from __future__ import annotations

import secrets
import socket
import sys
import time
from pathlib import Path

import anyio
from mcp.server import MCPServer
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
from mcp.server.mcpserver import Context
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

LIFETIME_S = 3600


class Provider:
    """Everything in memory; counts what happened for the tests."""

    def __init__(self) -> None:
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access: dict[str, AccessToken] = {}
        self.refresh: dict[str, RefreshToken] = {}
        self.issued: list[str] = []
        self.counts = {"registrations": 0, "authorizations": 0, "refreshes": 0, "revocations": 0}

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        assert client_info.client_id is not None
        self.clients[client_info.client_id] = client_info
        self.counts["registrations"] += 1

    async def authorize(
        self, client: OAuthClientInformationFull, params: AuthorizationParams
    ) -> str:
        code = secrets.token_urlsafe(24)
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or [],
            expires_at=time.time() + 300,
            client_id=str(client.client_id),
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
        )
        self.counts["authorizations"] += 1
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> AuthorizationCode | None:
        return self.codes.get(authorization_code)

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        del self.codes[authorization_code.code]
        return self._tokens(
            str(client.client_id), authorization_code.scopes, authorization_code.resource
        )

    async def load_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: str
    ) -> RefreshToken | None:
        return self.refresh.get(refresh_token)

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        del self.refresh[refresh_token.token]
        self.counts["refreshes"] += 1
        return self._tokens(
            str(client.client_id), scopes or refresh_token.scopes, refresh_token.resource
        )

    async def load_access_token(self, token: str) -> AccessToken | None:
        return self.access.get(token)

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        self.counts["revocations"] += 1
        self.access.pop(token.token, None)
        self.refresh.pop(token.token, None)

    def _tokens(self, client_id: str, scopes: list[str], resource: str | None) -> OAuthToken:
        access, refresh = secrets.token_urlsafe(24), secrets.token_urlsafe(24)
        expires = int(time.time()) + LIFETIME_S
        self.access[access] = AccessToken(
            token=access, client_id=client_id, scopes=scopes, expires_at=expires, resource=resource
        )
        self.refresh[refresh] = RefreshToken(
            token=refresh, client_id=client_id, scopes=scopes, resource=resource
        )
        self.issued.extend([access, refresh])
        return OAuthToken(
            access_token=access,
            expires_in=LIFETIME_S,
            refresh_token=refresh,
            scope=" ".join(scopes) or None,
        )


def build(port: int, path: str) -> tuple[MCPServer, Provider]:
    provider = Provider()
    base = f"http://127.0.0.1:{port}"
    server = MCPServer(
        "oauth-test",
        log_level="WARNING",
        auth_server_provider=provider,
        auth=AuthSettings(
            issuer_url=base,  # type: ignore[arg-type]
            resource_server_url=f"{base}/{path}",  # type: ignore[arg-type]
            client_registration_options=ClientRegistrationOptions(enabled=True),
            revocation_options=RevocationOptions(enabled=True),
            validate_token_resource=False,
        ),
    )

    @server.tool()
    def whoami() -> str:
        """Say that the caller got in."""
        return "authorized"

    @server.tool()
    async def count_to(steps: int, gate: str, ctx: Context) -> str:
        """Report a progress notification per step, then wait for a line on the FIFO `gate`."""
        for step in range(1, steps + 1):
            await ctx.report_progress(step, steps, f"step {step} of {steps}")
        await anyio.to_thread.run_sync(Path(gate).read_text)
        return f"counted to {steps}"

    @server.custom_route("/test/expire", methods=["POST"])
    async def expire(request: Request) -> Response:
        provider.access.clear()
        return JSONResponse({"ok": True})

    @server.custom_route("/test/state", methods=["GET"])
    async def state(request: Request) -> Response:
        return JSONResponse(
            {**provider.counts, "live_refresh": len(provider.refresh), "issued": provider.issued}
        )

    return server, provider


def main(transport: str) -> None:
    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    port = sock.getsockname()[1]
    path = "sse" if transport == "sse" else "mcp"
    server, _ = build(port, path)
    app = server.sse_app() if transport == "sse" else server.streamable_http_app()
    print(f"http://127.0.0.1:{port}/{path}", flush=True)
    config = uvicorn.Config(app, log_level="warning")
    anyio.run(lambda: uvicorn.Server(config).serve(sockets=[sock]))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "http")
