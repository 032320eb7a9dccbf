"""Helpers the MCP tests share: the test server as a `.mcp.json` entry, files, waits."""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]


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
