"""Helpers the MCP tests share: the test server as a `.mcp.json` entry, files, waits."""

from __future__ import annotations

import asyncio
import json
import logging
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from dsh.plugins.mcp import ServerSpec, parse_servers

ROOT = Path(__file__).resolve().parents[3]


class OAuthServer:
    def __init__(self, url: str) -> None:
        self.url = url
        self.base = url.rsplit("/", 1)[0]

    def spec(self, name: str = "hosted") -> ServerSpec:
        (spec,) = parse_servers({name: self.entry()}, "test", base=ROOT, env=None)
        return spec

    def entry(self) -> dict[str, Any]:
        return {"type": "sse" if self.url.endswith("/sse") else "http", "url": self.url}

    def state(self) -> dict[str, Any]:
        data: dict[str, Any] = httpx.get(f"{self.base}/test/state").json()
        return data

    def expire_access_tokens(self) -> None:
        httpx.post(f"{self.base}/test/expire").raise_for_status()


@contextmanager
def running_oauth_server(transport: str = "http") -> Iterator[OAuthServer]:
    """`oauth_server.py` in a child process, over streamable HTTP or SSE."""
    child = subprocess.Popen(
        [sys.executable, "-m", "tests.plugins.mcp.oauth_server", transport],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        yield OAuthServer(child.stdout.readline().strip())
    finally:
        child.terminate()
        child.wait(timeout=10)


def stdio_server(**extra: Any) -> dict[str, Any]:
    """A `.mcp.json` entry running the test server (`server.py`) as a stdio child."""
    entry: dict[str, Any] = {
        "command": sys.executable,
        "args": ["-m", "tests.plugins.mcp.server"],
        "env": {"PYTHONPATH": str(ROOT)},
        "cwd": str(ROOT),
    }
    return {**entry, **extra}


def write_mcp_json(folder: Path, servers: dict[str, Any]) -> Path:
    path = folder / ".mcp.json"
    path.write_text(json.dumps({"mcpServers": servers}))
    return path


class LineWatch(logging.Handler):
    """Resolves `seen` when a server writes a given stderr line (logged by `dsh.mcp.<name>`)."""

    def __init__(self, text: str) -> None:
        super().__init__(logging.INFO)
        self.text = text
        self.seen: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def emit(self, record: logging.LogRecord) -> None:
        if self.text in record.getMessage() and not self.seen.done():
            self.seen.set_result(None)
