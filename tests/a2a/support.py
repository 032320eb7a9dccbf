"""`dsh a2a` as a child process on a free port, its model a loopback server, and the official
a2a-sdk client pointed at it."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
from a2a.client import Client, ClientConfig, create_client
from a2a.helpers import new_text_message
from a2a.types import Role, SendMessageRequest, StreamResponse

from tests.cli.support import DSH, loopback_env

TOKEN = "a2a-test-token-0123456789"


@dataclass
class Served:
    base: str
    """`http://127.0.0.1:PORT`."""
    child: asyncio.subprocess.Process


@asynccontextmanager
async def dsh_a2a(tmp_path: Path, model_url: str, *args: str) -> AsyncIterator[Served]:
    """`dsh a2a --port 0` in `tmp_path/ws` with the token file `TOKEN`; stopped at the end."""
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    token = tmp_path / "token"
    token.write_text(TOKEN)
    token.chmod(0o600)
    cmd = ["a2a", "--port", "0", "--cwd", str(ws), "--token-file", str(token), *args]
    env = loopback_env(tmp_path, model_url)
    child = await asyncio.create_subprocess_exec(
        sys.executable, *DSH, *cmd, env=env, stdout=-1, stderr=-1
    )
    try:
        assert child.stdout is not None
        line = (await asyncio.wait_for(child.stdout.readline(), 60)).decode().strip()
        assert line.startswith("dsh a2a: http://127.0.0.1:"), line
        endpoint = line.removeprefix("dsh a2a: ").split()[0]
        yield Served(endpoint.removesuffix("/a2a"), child)
    finally:
        if child.returncode is None:
            child.terminate()
            await asyncio.wait_for(child.wait(), 30)


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
