"""`dsh acp` on stdin/stdout: newline-delimited JSON-RPC frames, a bad frame answered with a
protocol error (the SDK's own reader skips it silently), and the connection's end ending
the process after every agent is disposed."""

from __future__ import annotations

import asyncio
import json
from typing import BinaryIO, cast

from acp.agent.connection import AgentSideConnection
from acp.interfaces import Agent

from .._context import Context
from ..llm import Json
from ..server import FrameOutput, Line, Overlong, line_queue
from ._agent import AcpAgent, AcpSettings

__all__ = ["FrameStream", "read_frame", "serve"]


PARSE_ERROR, INVALID_REQUEST = -32700, -32600


def _error(code: int, message: str, id: Json = None) -> dict[str, Json]:
    return {"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}


def read_frame(line: bytes) -> tuple[dict[str, Json] | None, dict[str, Json] | None]:
    """`(frame, None)` for a JSON-RPC message, `(None, error)` for the error that answers a
    malformed one, `(None, None)` for a blank line."""
    text = line.strip()
    if not text:
        return None, None
    try:
        frame = json.loads(text)
    except (ValueError, RecursionError):  # RecursionError: nesting deeper than the parser goes
        return None, _error(PARSE_ERROR, "parse error: a frame is one JSON object per line")
    if not isinstance(frame, dict):
        return None, _error(INVALID_REQUEST, "invalid request: a frame is a JSON object")
    id = frame.get("id")
    valid_id = id is None or (isinstance(id, str | int) and not isinstance(id, bool))
    if "method" in frame:
        if not isinstance(frame["method"], str) or not valid_id:
            return None, _error(INVALID_REQUEST, "invalid request", id if valid_id else None)
        return frame, None
    if "id" not in frame or not valid_id or not ("result" in frame or "error" in frame):
        return None, _error(INVALID_REQUEST, "invalid request: no method, result or error")
    return frame, None


class FrameStream:
    """The SDK's message transport over stdin's lines and stdout's frames."""

    def __init__(self, lines: asyncio.Queue[Line], output: FrameOutput) -> None:
        self.lines = lines
        self.output = output

    async def receive(self) -> dict[str, Json] | None:
        while not self.output.closed.is_set():
            line = await self.lines.get()
            if line is None:
                return None
            if isinstance(line, Overlong):  # too long to read whole: answered, not parsed
                self.output.send(line.answer())
                continue
            frame, problem = read_frame(line)
            if problem is not None:
                self.output.send(problem)
            elif frame is not None:
                return frame
        return None  # nobody reads our answers any more

    async def send(self, message: dict[str, Json]) -> None:
        if self.output.closed.is_set():
            raise ConnectionError("stdout is closed")
        self.output.send(message)

    async def close(self) -> None:
        pass  # stdout stays open for the process's last words (stderr gets the logs)


async def serve(ctx: Context, settings: AcpSettings, stdin: BinaryIO, stdout: BinaryIO) -> int:
    """Serve one ACP connection on `stdin`/`stdout` until the client closes it; then dispose
    every agent of the connection and `ctx`. Returns the exit code."""
    agent = AcpAgent(ctx, settings)
    output = FrameOutput(stdout)
    try:
        lines = await line_queue(stdin, ctx.owner)
        # The SDK routes the methods an agent defines; the others answer method-not-found.
        sdk_agent = cast(Agent, agent)
        connection = AgentSideConnection(sdk_agent, FrameStream(lines, output), listening=False)
        try:
            await connection.listen()
        finally:
            await connection.close()
    finally:
        await agent.close()
        await ctx.owner.dispose()
        await output.drain()  # frames sent in this last pass of the loop, written
    return 0
