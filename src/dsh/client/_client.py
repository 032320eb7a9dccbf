"""A client for the JSON-RPC runtime: launch it, prompt sessions, collect runs."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import os
import sys
import threading
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias, TypeVar

import msgspec

from .._ids import uuid4_hex, uuid4_text
from ..event_types import AGENT_INBOX_SPLICED, ASSISTANT_MESSAGE, TURN_END

if TYPE_CHECKING:  # dsh.llm would pull in the kernel: a client stays light
    from ..events import ToolProgressEvent, TypedEvent
    from ..llm import Json

DEFAULT_COMMAND: tuple[str, ...] = (sys.executable, "-m", "dsh.server")
_EXITED: dict[str, Json] = {"method": "<runtime exited>"}
"""Put on every subscriber's queue when the runtime's stdout closes."""


T = TypeVar("T")

QuestionHandler: TypeAlias = Callable[[dict[str, Any]], Awaitable[Any] | Any]
"""Gets `{sessionId, callId, questions: [{question, header, options: [{label, description}],
multiSelect}]}`; returns `{answers: [{selected: [label, ...], text}]}`, one per question, or
`{answers: None}` when the person declines."""


class HarnessRpcError(Exception):
    """The runtime answered a request with an error."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(f"{message} (JSON-RPC {code})")
        self.code = code


class RunResult(msgspec.Struct, frozen=True):
    """One prompt's run: from its inbox receipt to the next `idle` of its session."""

    session_id: str
    final_response: str
    finish_reason: str | None
    events: tuple[dict[str, Json], ...]
    notifications: tuple[dict[str, Json], ...] = msgspec.field()

    @property
    def budget(self) -> str | None:
        """The budget the run stopped at (`finish_reason` `aborted`), as the `turn/end`
        logs it: `budget:<scope>:<limit>=<value>`, e.g. `budget:run:max-steps=10`."""
        for event in reversed(self.events):
            if event.get("type") != TURN_END:
                continue
            data = event.get("data")
            reason = data.get("reason") if isinstance(data, dict) else None
            cause = reason.get("reason") if isinstance(reason, dict) else None
            if isinstance(cause, dict) and cause.get("kind") == "hook":
                text = cause.get("reason")
                if isinstance(text, str) and text.startswith("budget:"):
                    return text
            return None
        return None


class AsyncHarness:
    """Launches a runtime (ours by default) as a subprocess and drives it.

    ```python
    async with AsyncHarness(provider="deepseek-official", model="deepseek-chat") as h:
        result = await h.run("Summarise README.md")
    ```
    """

    def __init__(
        self,
        *,
        provider: str,
        model: str,
        cwd: str | None = None,
        max_tokens: int | None = None,
        limits: Mapping[str, Json] | None = None,
        command: Sequence[str] = DEFAULT_COMMAND,
        env: Mapping[str, str] | None = None,
        answer_questions: QuestionHandler | None = None,
    ) -> None:
        self.provider = provider
        self.model = model
        self.cwd = os.path.abspath(cwd or os.getcwd())
        self.max_tokens = max_tokens
        self.limits = dict(limits) if limits else None
        """Per-run usage limits of every session (`initialize` `limits`: `maxSteps`,
        `maxToolCalls`, `maxTokensIn`, `maxTokensOut`, `maxCost`)."""
        self.command = tuple(command)
        self.env = dict(os.environ if env is None else env)
        self.answer_questions = answer_questions
        """Answers the model's questions (`session/ask-user-question`); without it the
        runtime tells the model nobody can answer."""
        self._process: asyncio.subprocess.Process | None = None
        self._pending: dict[str, asyncio.Future[Json]] = {}
        self._subscribers: list[asyncio.Queue[dict[str, Json]]] = []
        """Subscribed to every notification (`subscribe()`)."""
        self._by_session: dict[str, list[asyncio.Queue[dict[str, Json]]]] = {}
        """Subscribed to one session's notifications and its subagents' (`subscribe(id)`)."""
        self._session_of: dict[asyncio.Queue[dict[str, Json]], str] = {}
        self._parents: dict[str, str] = {}
        """A subagent's session → its parent's, from `subagent.started`."""
        self._reader: asyncio.Task[None] | None = None
        self._group: asyncio.TaskGroup | None = None
        """Where the reader runs what it starts, while it runs."""
        self.stderr_lines: list[str] = []
        self.trace: list[dict[str, Json]] | None = None
        """Set to a list to record every frame sent and received, in wire order."""

    async def __aenter__(self) -> AsyncHarness:
        try:
            await self.start()
        except BaseException:
            await self.close()  # a refused `initialize` leaves no runtime process behind
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def start(self) -> None:
        self._process = await asyncio.create_subprocess_exec(
            *self.command,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=self.env,
            limit=64 * 1024 * 1024,
        )
        # No kernel here (a client of another process stays light, and its life spans calls
        # made from different tasks): one task serves the runtime's output, and what it
        # starts runs in its TaskGroup; close() awaits it, to the end of the child's output.
        self._reader = asyncio.ensure_future(self._serve())
        params: dict[str, Json] = {"cwd": self.cwd, "provider": self.provider, "model": self.model}
        if self.max_tokens is not None:
            params["maxTokens"] = self.max_tokens
        capabilities: dict[str, Json] = {"toolProgress": True}
        if self.answer_questions is not None:
            capabilities["askUserQuestion"] = True
        params["capabilities"] = capabilities
        if self.limits is not None:
            params["limits"] = self.limits
        await self.request("initialize", params)

    async def _serve(self) -> None:
        try:
            async with asyncio.TaskGroup() as group:
                self._group = group
                self._background(self._drain_stderr())
                await self._read()
        finally:
            self._group = None

    def _background(self, coro: Coroutine[object, None, None]) -> None:
        """Run `coro` in the reader's TaskGroup (dropped once the runtime's output ended)."""
        if self._group is None:
            coro.close()
            return
        self._group.create_task(coro)

    async def _drain_stderr(self) -> None:
        assert self._process is not None and self._process.stderr is not None
        async for line in self._process.stderr:
            self.stderr_lines.append(line.decode("utf-8", "replace").rstrip())

    async def _read(self) -> None:
        assert self._process is not None and self._process.stdout is not None
        try:
            async for line in self._process.stdout:
                try:
                    frame = json.loads(line)
                except ValueError:
                    continue  # not a frame (SPEC §6.1: malformed lines are ignored)
                if not isinstance(frame, dict):
                    continue
                if self.trace is not None:
                    self.trace.append(frame)
                if "method" in frame and "id" in frame:
                    self._background(self._answer(frame))
                    continue
                if "method" in frame:
                    self._route(frame)
                    continue
                future = self._pending.pop(str(frame.get("id")), None)
                if future is None or future.done():
                    continue
                error = frame.get("error")
                if isinstance(error, dict):
                    future.set_exception(
                        HarnessRpcError(error.get("code", 0), str(error.get("message")))
                    )
                else:
                    future.set_result(frame.get("result"))
        finally:
            for future in self._pending.values():
                if not future.done():
                    future.set_exception(ConnectionError("the runtime exited"))
            for queue in self._subscribers:
                queue.put_nowait(_EXITED)
            for queues in self._by_session.values():
                for queue in queues:
                    queue.put_nowait(_EXITED)

    def _route(self, frame: dict[str, Json]) -> None:
        """Hand a notification to who subscribed to everything, and to who subscribed to its
        session or one of that session's ancestors: O(depth), whatever the number of runs."""
        for queue in self._subscribers:
            queue.put_nowait(frame)
        params = frame.get("params")
        if not isinstance(params, dict):
            return
        session = params.get("sessionId") or params.get("parentSessionId")
        if frame["method"] == "subagent.started":
            child, parent = params.get("childSessionId"), params.get("parentSessionId")
            if isinstance(child, str) and isinstance(parent, str):
                self._parents[child] = parent
        elif frame["method"] == "subagent.finished":
            child = params.get("childSessionId")
            if isinstance(child, str) and child not in self._by_session:
                self._parents.pop(child, None)
        seen = 0
        while isinstance(session, str) and seen < 64:  # a depth bound, against a cycle
            for queue in self._by_session.get(session, ()):
                queue.put_nowait(frame)
            session, seen = self._parents.get(session), seen + 1

    async def _answer(self, frame: dict[str, Json]) -> None:
        """Answer a request of the runtime (only `session/ask-user-question` is known)."""
        reply: dict[str, Json] = {"jsonrpc": "2.0", "id": frame["id"]}
        handler = self.answer_questions
        if frame["method"] != "session/ask-user-question" or handler is None:
            reply["error"] = {"code": -32601, "message": f"method not found: {frame['method']}"}
        else:
            try:
                params = frame.get("params") or {}
                if not isinstance(params, dict):
                    raise TypeError("params must be an object")
                answered = handler(params)
                reply["result"] = await answered if inspect.isawaitable(answered) else answered
            except Exception as exc:
                reply["error"] = {"code": -32603, "message": str(exc) or type(exc).__name__}
        with contextlib.suppress(ConnectionError, OSError):
            await self._write(reply)

    async def _write(self, frame: dict[str, Json]) -> None:
        process = self._process
        if process is None or process.stdin is None:
            raise ConnectionError("the runtime is not running")
        if self.trace is not None:
            self.trace.append(frame)
        process.stdin.write(json.dumps(frame, separators=(",", ":")).encode() + b"\n")
        await process.stdin.drain()

    async def request(self, method: str, params: Json = None) -> Json:
        id = uuid4_text()
        frame: dict[str, Json] = {"jsonrpc": "2.0", "id": id, "method": method}
        if params is not None:
            frame["params"] = params
        future: asyncio.Future[Json] = asyncio.get_running_loop().create_future()
        self._pending[id] = future
        try:
            await self._write(frame)
        except BaseException:
            self._pending.pop(id, None)
            raise
        return await future

    def subscribe(self, session_id: str | None = None) -> asyncio.Queue[dict[str, Json]]:
        """A queue of the runtime's notifications: every one, or (with `session_id`) those of
        that session and of its subagents' sessions."""
        queue: asyncio.Queue[dict[str, Json]] = asyncio.Queue()
        if session_id is None:
            self._subscribers.append(queue)
        else:
            self._by_session.setdefault(session_id, []).append(queue)
            self._session_of[queue] = session_id
        return queue

    def unsubscribe(self, queue: asyncio.Queue[dict[str, Json]]) -> None:
        session_id = self._session_of.pop(queue, None)
        if session_id is None:
            with contextlib.suppress(ValueError):
                self._subscribers.remove(queue)
            return
        queues = self._by_session[session_id]
        queues.remove(queue)
        if not queues:
            del self._by_session[session_id]

    async def run(
        self,
        text: str,
        *,
        session_id: str | None = None,
        on_event: Callable[[TypedEvent], object] | None = None,
        limits: Mapping[str, Json] | None = None,
        on_progress: Callable[[ToolProgressEvent], object] | None = None,
    ) -> RunResult:
        """Prompt a session and wait for it to be idle again. A new session by default; an
        existing id continues it (a stored one is resumed). `on_event` is called with each of
        the session's events of the run as it arrives, typed (`dsh.events`); `on_progress`
        with each `tool.progress` of its running tool calls (a command's output, live).
        `limits`: this run's usage limits, over the harness's (`RunResult.budget` names the
        one it hit)."""
        session_id = session_id or f"session-{uuid4_hex()}"
        queue = self.subscribe(session_id)
        try:
            result = await self.request(
                "session/prompt",
                _prompt_params(session_id, text, limits),
            )
            assert isinstance(result, dict) and isinstance(result["messageId"], str)
            return await _collect(queue, session_id, result["messageId"], on_event, on_progress)
        finally:
            self.unsubscribe(queue)

    async def resume(self, session_id: str) -> None:
        """Load a stored session into the runtime (its pending prompts run on the next)."""
        await self.request("session/resume", {"sessionId": session_id})

    async def cancel(self, session_id: str) -> None:
        """Cancel the session's running turn; its run ends with finish reason `aborted`."""
        await self.request("session/cancel", {"sessionId": session_id})

    async def rewind(
        self,
        session_id: str,
        to: int | None = None,
        *,
        mode: str = "both",
        undo: bool = False,
        force: bool = False,
        dry_run: bool = False,
    ) -> dict[str, Json]:
        """Take the session's files (`mode="code"`), conversation or both back to just
        before prompt `to`, or `undo` its last rewind (`session/rewind`): the report
        (`restored`, `kept`: files changed outside dsh, kept unless `force`; `patch`)."""
        params: dict[str, Json] = {"sessionId": session_id, "mode": mode, "undo": undo}
        params |= {"to": to, "force": force, "dryRun": dry_run}
        result = await self.request("session/rewind", params)
        assert isinstance(result, dict)
        return result

    async def close(self) -> None:
        """Ask the runtime to shut down, then close its stdin; kill it if it lingers."""
        process = self._process
        if process is None:
            return
        if process.returncode is None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.request("shutdown"), timeout=10)
        self._process = None
        if process.stdin is not None:
            process.stdin.close()
        try:
            await asyncio.wait_for(process.wait(), timeout=10)
        except TimeoutError:
            process.kill()
            await process.wait()
        if self._reader is not None:
            await asyncio.gather(self._reader, return_exceptions=True)


def _prompt_params(session_id: str, text: str, limits: Mapping[str, Json] | None) -> Json:
    params: dict[str, Json] = {
        "sessionId": session_id,
        "contentBlocks": [{"type": "text", "text": text}],
    }
    if limits:
        params["limits"] = dict(limits)
    return params


async def _collect(
    queue: asyncio.Queue[dict[str, Json]],
    session_id: str,
    message_id: str,
    on_event: Callable[[TypedEvent], object] | None,
    on_progress: Callable[[ToolProgressEvent], object] | None = None,
) -> RunResult:
    notifications: list[dict[str, Json]] = []
    events: list[dict[str, Json]] = []
    received = False
    while True:
        frame = await queue.get()
        if frame is _EXITED:
            raise ConnectionError(f"the runtime exited during the run of {session_id}")
        params: Any = frame.get("params") or {}
        ours = params.get("sessionId") == session_id
        if not received:
            event = params.get("event") or {}
            inserted = (event.get("data") or {}).get("inserted") or []
            if (
                ours
                and event.get("type") == AGENT_INBOX_SPLICED
                and any(m.get("id") == message_id for m in inserted)
            ):
                received = True
            else:
                continue
        notifications.append(frame)
        if frame["method"] == "session.event" and ours:
            events.append(params["event"])
            if on_event is not None:
                on_event(_typed(params["event"]))
        if frame["method"] == "tool.progress" and ours and on_progress is not None:
            on_progress(_progress(params["event"]))
        if frame["method"] == "session.status" and ours and params.get("status") == "idle":
            break
    final = ""
    finish: str | None = None
    for event in events:
        data: Any = event["data"]  # a log line of the runtime's, read by shape like `params`
        if event["type"] == ASSISTANT_MESSAGE:
            blocks = data["message"]["content"]
            final = "".join(b["text"] for b in blocks if b.get("type") == "text")
        elif event["type"] == TURN_END:
            finish = data["reason"]["kind"]
    return RunResult(session_id, final, finish, tuple(events), tuple(notifications))


async def _quietly(request: Awaitable[None]) -> None:
    """A request nobody waits for: a runtime that refuses it or is gone is no error."""
    with contextlib.suppress(HarnessRpcError, ConnectionError, OSError):
        await request


def _typed(event: dict[str, Json]) -> TypedEvent:
    from ..events import typed  # only for runs with a callback: the client stays light
    from ..session import SessionEvent

    return typed(SessionEvent.from_json(event))


def _progress(event: dict[str, Json]) -> ToolProgressEvent:
    from ..events import ToolProgressEvent  # only for runs with a callback

    return ToolProgressEvent.from_json(event)


class Harness:
    """The synchronous twin of `AsyncHarness` (its event loop runs in a background thread).

    ```python
    with Harness(provider="deepseek-official", model="deepseek-chat") as h:
        print(h.run("What is in this directory?").final_response)
    ```
    """

    def __init__(self, **options: Any) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        self._async = AsyncHarness(**options)
        self._call(self._async.start())

    def _call(self, coro: Coroutine[object, None, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result()

    def run(
        self,
        text: str,
        *,
        session_id: str | None = None,
        on_event: Callable[[TypedEvent], object] | None = None,
        limits: Mapping[str, Json] | None = None,
        on_progress: Callable[[ToolProgressEvent], object] | None = None,
    ) -> RunResult:
        """`AsyncHarness.run`; `on_event` and `on_progress` run on the harness's thread.
        Ctrl-C cancels the run (and waits for it to end) before it propagates."""
        session_id = session_id or f"session-{uuid4_hex()}"
        run = self._async.run(
            text, session_id=session_id, on_event=on_event, limits=limits, on_progress=on_progress
        )
        running = asyncio.run_coroutine_threadsafe(run, self._loop)
        try:
            result: RunResult = running.result()
        except KeyboardInterrupt:
            self._call(self._async.cancel(session_id))
            running.result()
            raise
        return result

    def resume(self, session_id: str) -> None:
        self._call(self._async.resume(session_id))

    def cancel(self, session_id: str) -> None:
        """Cancel the session's running turn (from another thread, or from `on_event`)."""
        if threading.current_thread() is self._thread:  # from on_event: don't block the loop
            self._async._background(_quietly(self._async.cancel(session_id)))
            return
        self._call(self._async.cancel(session_id))

    def rewind(
        self,
        session_id: str,
        to: int | None = None,
        *,
        mode: str = "both",
        undo: bool = False,
        force: bool = False,
        dry_run: bool = False,
    ) -> dict[str, Json]:
        """`AsyncHarness.rewind`, from synchronous code."""
        rewind = self._async.rewind(
            session_id, to, mode=mode, undo=undo, force=force, dry_run=dry_run
        )
        return self._call(rewind)

    def request(self, method: str, params: Json = None) -> Json:
        return self._call(self._async.request(method, params))

    def close(self) -> None:
        if self._loop.is_closed():
            return
        self._call(self._async.close())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()

    def __enter__(self) -> Harness:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
