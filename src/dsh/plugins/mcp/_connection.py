"""`Connection`: the one client session to one MCP server, shared by every agent that uses
it — started once, restarted with backoff after a crash, stopped with its owner."""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, TypeVar

from ..._lazy import extra_hint
from ...kernel import CancelSignal, Disposer, Owner
from ...llm import Json
from ._auth_store import LoginRequired
from ._config import RestartPolicy, ServerSpec, State
from ._tools import ConnectionLost, McpToolError, Progress

T = TypeVar("T")

if TYPE_CHECKING:
    import anyio

    from ._transport import Elicit, McpSession

__all__ = ["Connection"]

_STDERR_LINES = 20
_log = logging.getLogger("dsh.mcp")


class Connection:
    """One server's session. `state` moves pending → starting → ready, and from ready to
    restarting (a crash) and back, or to failed (it never started, or crashed too often);
    `stopped` once closed. Every change calls `on_change(self)`."""

    def __init__(
        self,
        spec: ServerSpec,
        *,
        owner: Owner,
        startup_timeout_ms: float,
        restart: RestartPolicy,
        on_change: Callable[[Connection], None],
        elicit: Elicit | None = None,
    ) -> None:
        self.spec = spec
        self.state: State = "pending"
        self.error: str | None = None
        self.tools: tuple[Mapping[str, Json], ...] = ()
        self.has_resources = False
        self.prompts: tuple[Mapping[str, Json], ...] = ()
        self.resources: tuple[Mapping[str, Json], ...] = ()
        """Resources and resource templates (`uriTemplate`), for `@server:uri` mentions."""
        self.restarts = 0
        self.stderr: deque[str] = deque(maxlen=_STDERR_LINES)
        self._owner = owner
        self._startup_s = startup_timeout_ms / 1000
        self._restart = restart
        self._on_change = on_change
        self._elicit = elicit
        self._session: McpSession | None = None
        self._changes = asyncio.Event()
        self._refresh = asyncio.Event()
        self._stop = CancelSignal()
        self._scope: anyio.CancelScope | None = None
        self._lost: str | None = None
        self._task: asyncio.Task[None] | None = None
        self._shutdown: Disposer | None = None

    @property
    def settled(self) -> bool:
        """The first start is over (ready or failed): waiting longer gains nothing."""
        return self.state in ("ready", "failed", "stopped") or self.restarts > 0

    def start(self) -> None:
        """Start the session in the background (once)."""
        if self._task is not None or self.state != "pending":
            return
        if self.spec.problem is not None:
            self._set("failed", self.spec.problem)
            return
        self._task = self._owner.spawn(self._run(), name=f"dsh-mcp:{self.spec.name}")
        # Registered after the task: disposal closes the session before it cancels the task.
        self._shutdown = self._owner.effect(self._close)

    async def stop(self) -> None:
        """Close the session; a stdio server's process group is stopped. Idempotent."""
        if self._shutdown is not None:
            await self._shutdown.dispose()
        elif self.state == "pending":
            self._set("stopped", None)

    async def _close(self) -> None:
        self._stop.abort("stopped")
        self._lose("stopped")
        if self._task is not None:
            await asyncio.wait([self._task])
        self._set("stopped", None)

    async def restart(self) -> None:
        """Stop the session if any, then start anew (a failed server after a login)."""
        if self._task is not None:
            await self.stop()
        self._task, self._shutdown, self.restarts = None, None, 0
        self._stop = CancelSignal()
        self._set("pending", None)
        self.start()

    async def wait_settled(self, signal: CancelSignal) -> None:
        self.start()
        while not self.settled:
            await signal.race(self._changes.wait())

    # -- requests ------------------------------------------------------------------------------

    async def call_tool(
        self,
        tool: str,
        arguments: dict[str, Json],
        signal: CancelSignal,
        progress: Progress | None = None,
    ) -> Json:
        return await self._request(lambda s: s.call(tool, arguments, progress), signal, "the call")

    async def list_resources(self, signal: CancelSignal) -> list[dict[str, Json]]:
        result: list[dict[str, Json]] = await self._request(
            lambda s: s.resources(), signal, "the listing"
        )
        return result

    async def get_prompt(
        self, name: str, arguments: dict[str, str], signal: CancelSignal
    ) -> dict[str, Json]:
        result: dict[str, Json] = await self._request(
            lambda s: s.get_prompt(name, arguments), signal, "the prompt"
        )
        return result

    async def read_resource(self, uri: str, signal: CancelSignal) -> list[Json]:
        result: list[Json] = await self._request(lambda s: s.read(uri), signal, "the read")
        return result

    async def _request(
        self, send: Callable[[McpSession], Awaitable[T]], signal: CancelSignal, what: str
    ) -> T:
        session = await self._ready_session(signal)
        try:
            # A cancelled request is cancelled on the server too (`notifications/cancelled`).
            return await signal.race(send(session))
        except ConnectionLost:
            self._lose("the connection closed")
            while self._session is session:  # let the runner note why (the stderr tail)
                await signal.race(self._changes.wait())
            raise McpToolError(
                f'MCP server "{self.spec.name}" stopped during {what} ({self.error}); '
                + ("it is being restarted" if self.state == "restarting" else "it is not running"),
                "MCP_CONNECTION_LOST",
            ) from None

    async def _ready_session(self, signal: CancelSignal) -> McpSession:
        self.start()
        while self._session is None:
            if self.state in ("failed", "stopped"):
                raise McpToolError(
                    f'MCP server "{self.spec.name}" is not running: {self.error or self.state}',
                    "MCP_UNAVAILABLE",
                )
            await signal.race(self._changes.wait())
        return self._session

    # -- the session's lifetime ----------------------------------------------------------------

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        failures = 0
        while not self._stop.aborted:
            ready_at, why = await self._attempt()
            if self._stop.aborted:
                return
            if ready_at is None and self.restarts == 0:
                _log.warning('MCP server "%s" did not start: %s', self.spec.name, why)
                self._set("failed", why)  # its tools are missing; nothing else stops
                return
            up_ms = 0.0 if ready_at is None else (loop.time() - ready_at) * 1000
            failures = 1 if up_ms >= self._restart.stable_ms else failures + 1
            if failures > self._restart.max_restarts:
                why = f"{why}; gave up after {self._restart.max_restarts} restarts"
                _log.warning('MCP server "%s" stopped: %s', self.spec.name, why)
                self._set("failed", why)
                return
            self.restarts += 1
            self._set("restarting", why)
            _log.warning('MCP server "%s" stopped (%s); restarting it', self.spec.name, why)
            if await self._stop.sleep(self._restart.delay_s(failures)) is False:
                return

    async def _attempt(self) -> tuple[float | None, str]:
        """One session, until it ends: when it became ready (loop time) and why it ended."""
        loop = asyncio.get_running_loop()
        ready_at: float | None = None
        self._lost = None
        self.stderr.clear()
        if self.restarts == 0:
            self._set("starting", None)
        import anyio  # with the SDK: only once a server starts

        with anyio.CancelScope() as scope:
            self._scope = scope
            timer = loop.call_later(self._startup_s, self._timed_out)
            try:
                from ._transport import open_session

                async with open_session(
                    self.spec,
                    owner=self._owner,
                    on_list_changed=self._refresh.set,
                    on_closed=lambda: self._lose("the server closed the connection"),
                    on_stderr=self._stderr_line,
                    on_elicit=self._elicit,
                ) as session:
                    await self._load(session)
                    timer.cancel()
                    ready_at = loop.time()
                    self._session = session
                    self._set("ready", None)
                    while True:
                        await self._refresh.wait()
                        self._refresh.clear()
                        await self._load(session)
                        self._on_change(self)
            except Exception as exc:
                self._lost = self._lost or _describe(exc, self.spec)
            finally:
                timer.cancel()
                self._session = None
                self._scope = None
        return ready_at, self._with_stderr(self._lost or "the session ended")

    async def _load(self, session: McpSession) -> None:
        """Tools, prompts and resources (again after a `list_changed` notification)."""
        self.tools = tuple(await session.tools())
        self.has_resources = session.has_resources
        try:  # what people use: a server whose listing fails still serves its tools
            self.prompts = tuple(await session.prompts()) if session.has_prompts else ()
            if session.has_resources:
                self.resources = (*await session.resources(), *await session.templates())
        except McpToolError as exc:
            _log.warning(
                'MCP server "%s": cannot list prompts or resources: %s', self.spec.name, exc
            )

    def _lose(self, why: str) -> None:
        if self._lost is None:
            self._lost = why
        if self._scope is not None:
            self._scope.cancel()

    def _timed_out(self) -> None:
        self._lose(f"it did not finish starting within {self._startup_s:g}s")

    def _stderr_line(self, line: str) -> None:
        self.stderr.append(line)
        logging.getLogger(f"dsh.mcp.{self.spec.name}").info("%s", line)

    def _with_stderr(self, why: str) -> str:
        last = next((line for line in reversed(self.stderr) if line.strip()), None)
        return f'{why} (stderr: "{last.strip()}")' if last else why

    def _set(self, state: State, error: str | None) -> None:
        self.state, self.error = state, error
        if state in ("failed", "stopped"):
            self.tools, self.prompts, self.resources = (), (), ()
        changes, self._changes = self._changes, asyncio.Event()
        changes.set()
        self._on_change(self)


def _describe(exc: BaseException, spec: ServerSpec) -> str:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, LoginRequired):
        return str(exc)
    if isinstance(exc, ModuleNotFoundError) and (exc.name or "").startswith("mcp"):
        return f"the MCP SDK is not installed (dsh's mcp extra): {extra_hint('mcp')}"
    if isinstance(exc, OSError) and spec.transport == "stdio" and exc.strerror:
        return f"cannot run {spec.command!r}: {exc.strerror}"
    text = str(exc).strip()
    if type(exc).__module__.startswith("httpx") and spec.url:  # the SDK's HTTP client
        return f"cannot reach {spec.target}: {text or type(exc).__name__}"
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
