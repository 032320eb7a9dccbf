"""A real MCP server for the tests, written with the SDK: `python -m tests.plugins.mcp.server`
serves on stdin/stdout; `... http` (streamable HTTP) or `... sse` serves on 127.0.0.1 (a
free port) and prints its URL on the first stdout line."""

from __future__ import annotations

import base64
import os
import socket
import sys
from pathlib import Path

import anyio
from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.types import (
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
    ToolAnnotations,
)
from pydantic import BaseModel, Field

PIXEL = base64.b64encode(b"\x89PNG\r\n\x1a\n-not-really").decode()

server = MCPServer("test-server", instructions="A server the dsh tests drive.")
cancelled = anyio.Event()


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def echo(text: str, shout: bool = False) -> str:
    """Echo a text back."""
    return text.upper() if shout else text


@server.tool()
def picture() -> CallToolResult:
    """A text, an image, a resource link and an embedded resource."""
    return CallToolResult(
        content=[
            TextContent(type="text", text="a picture:"),
            ImageContent(type="image", data=PIXEL, mime_type="image/png"),
            ResourceLink(
                type="resource_link", uri="memo://one", name="one", mime_type="text/plain"
            ),
            EmbeddedResource(
                type="resource",
                resource=TextResourceContents(uri="memo://two", text="inline memo"),
            ),
        ]
    )


@server.tool()
def fail(reason: str) -> CallToolResult:
    """Report an error result."""
    return CallToolResult(
        content=[TextContent(type="text", text=f"failed: {reason}")], is_error=True
    )


@server.tool()
def crash() -> str:
    """Exit the server process in the middle of the call."""
    print("crashing now", file=sys.stderr, flush=True)
    os._exit(3)


@server.tool()
async def slow() -> str:
    """Wait until cancelled."""
    print("slow started", file=sys.stderr, flush=True)
    try:
        await anyio.sleep_forever()
    finally:
        cancelled.set()
    return "never"


@server.tool()
async def was_cancelled() -> bool:
    """Whether a `slow` call was cancelled (waits up to 10 s for it)."""
    with anyio.move_on_after(10):
        await cancelled.wait()
    return cancelled.is_set()


@server.tool()
async def grow(ctx: Context) -> str:
    """Add a tool named `fresh` and announce the change."""
    server.add_tool(lambda: "fresh!", name="fresh", description="A tool that appeared later.")
    await ctx.session.send_tool_list_changed()
    return "grew"


@server.tool()
async def count_to(steps: int, gate: str, ctx: Context) -> str:
    """Report a progress notification per step, then wait for a line on the FIFO `gate`."""
    for step in range(1, steps + 1):
        await ctx.report_progress(step, steps, f"step {step} of {steps}")
    await anyio.to_thread.run_sync(Path(gate).read_text)
    return f"counted to {steps}"


@server.tool()
def env_value(name: str) -> str:
    """An environment variable of the server process."""
    return os.environ.get(name, "(unset)")


@server.tool()
def traceparent(ctx: Context) -> str:
    """The `traceparent` the call's `_meta` carried ("" without one)."""
    meta = ctx.request_context.meta or {}
    return str(meta.get("traceparent", ""))


@server.tool()
def pid() -> int:
    """The server's process id."""
    return os.getpid()


class Booking(BaseModel):
    day: str = Field(title="Day")
    guests: int = Field(title="Guests", ge=1, le=8)
    terrace: bool = Field(title="Terrace", description="Sit outside")


@server.tool()
async def book(ctx: Context) -> str:
    """Book a table, asking the person for the details (elicitation)."""
    answer = await ctx.elicit("Book a table?", Booking)
    if answer.action != "accept":
        return answer.action
    data = answer.data
    return f"booked {data.day} for {data.guests} (terrace: {data.terrace})"


@server.prompt()
def review(path: str, focus: str = "bugs") -> str:
    """Review a file."""
    return f"Review {path}, looking for {focus}."


@server.tool()
async def grow_prompt(ctx: Context) -> str:
    """Add a prompt named `later` and announce the change."""
    server.prompt(name="later", description="A prompt that appeared later.")(lambda: "Later.")
    await ctx.session.send_prompt_list_changed()
    return "grew"


@server.resource("memo://{name}", description="Any memo by name")
def memo(name: str) -> str:
    return f"memo {name}"


@server.resource("memo://one", name="one", description="The first memo", mime_type="text/plain")
def memo_one() -> str:
    return "memo one"


def serve_http(transport: str) -> None:
    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    port = sock.getsockname()[1]
    app = server.sse_app() if transport == "sse" else server.streamable_http_app()
    print(f"http://127.0.0.1:{port}/{'sse' if transport == 'sse' else 'mcp'}", flush=True)
    config = uvicorn.Config(app, log_level="warning")
    anyio.run(lambda: uvicorn.Server(config).serve(sockets=[sock]))


if __name__ == "__main__":
    if sys.argv[1:] in (["http"], ["sse"]):
        serve_http(sys.argv[1])
    else:
        server.run()
