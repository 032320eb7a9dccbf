"""`dsh a2a` as a child process on a free port, its model a loopback server, and the official
a2a-sdk client pointed at it."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path

import httpx
from a2a.client import Client, ClientConfig, create_client
from a2a.helpers import new_text_message
from a2a.types import Role, SendMessageRequest, StreamResponse

from tests.cli.support import DSH, loopback_env

TOKEN = "a2a-test-token-0123456789"


@asynccontextmanager
async def dsh_server(tmp_path: Path, env: dict[str, str], *args: str) -> AsyncIterator[str]:
    """`dsh ARGS --port 0 --cwd tmp_path/ws --token-file …` (`dsh a2a` or `dsh web
    --no-open`) with the token `TOKEN`: the base URL it prints; stopped at the end."""
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    token = tmp_path / "token"
    token.write_text(TOKEN)
    token.chmod(0o600)
    options = ["--port", "0", "--cwd", str(ws), "--token-file", str(token)]
    child = await asyncio.create_subprocess_exec(
        sys.executable, *DSH, *args, *options, env=env, stdout=-1, stderr=-1
    )
    try:
        assert child.stdout is not None
        line = (await asyncio.wait_for(child.stdout.readline(), 60)).decode().strip()
        url = line.partition(": ")[2].split()[0]
        assert url.startswith("http://127.0.0.1:"), line
        yield url.partition("/?token=")[0].removesuffix("/a2a")
    finally:
        if child.returncode is None:
            child.terminate()
            await asyncio.wait_for(child.wait(), 30)


def dsh_a2a(tmp_path: Path, model_url: str) -> AbstractAsyncContextManager[str]:
    """`dsh a2a` on the loopback model at `model_url`: its base URL."""
    return dsh_server(tmp_path, loopback_env(tmp_path, model_url), "a2a")


def dsh_web(tmp_path: Path, env: dict[str, str]) -> AbstractAsyncContextManager[str]:
    """`dsh web` (with its A2A and AG-UI doors) in `env`: its base URL."""
    return dsh_server(tmp_path, env, "web", "--no-open")


@asynccontextmanager
async def a2a_client(
    base: str, *, streaming: bool = True, token: str = TOKEN
) -> AsyncIterator[Client]:
    headers = {"authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(headers=headers, timeout=60) as http:
        config = ClientConfig(streaming=streaming, httpx_client=http)
        client = await create_client(base, client_config=config)
        try:
            yield client
        finally:
            await client.close()


def request(
    text: str, *, context_id: str | None = None, task_id: str | None = None
) -> SendMessageRequest:
    message = new_text_message(text, context_id=context_id, task_id=task_id, role=Role.ROLE_USER)
    return SendMessageRequest(message=message)


async def collect(client: Client, sent: SendMessageRequest) -> list[StreamResponse]:
    return [response async for response in client.send_message(sent)]
