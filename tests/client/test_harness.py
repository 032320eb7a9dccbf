"""`dsh.client`: a streaming callback, cancel, and sessions that continue (resume) across
runtimes, against our JSON-RPC runtime and the loopback model server."""

from __future__ import annotations

import asyncio
from pathlib import Path

from dsh.client import AsyncHarness, Harness
from dsh.events import TextDeltaEvent, TurnEndEvent, TypedEvent
from dsh.testing import OpenAIServer, reply
from tests.server.test_jsonrpc_e2e import env_for, harness


async def test_a_callback_sees_the_run_stream(tmp_path: Path) -> None:
    seen: list[TypedEvent] = []
    long = "streamed back to you, " * 200  # over the 1 KiB a logged delta holds at most
    async with OpenAIServer([long]) as server, harness(tmp_path, server) as h:
        result = await h.run("hi", on_event=seen.append)
    deltas = [e.text for e in seen if isinstance(e, TextDeltaEvent)]
    assert len(deltas) > 1 and "".join(deltas) == result.final_response
    assert any(isinstance(e, TurnEndEvent) for e in seen)
    assert [e.seq for e in seen] == [e["seq"] for e in result.events]


async def test_cancel_from_the_callback(tmp_path: Path) -> None:
    server = OpenAIServer([reply("never finished", hang=True), "next"])
    async with server, harness(tmp_path, server) as h:
        session = "session-cancel"
        cancels: list[asyncio.Future[None]] = []

        def stop_at_text(event: TypedEvent) -> None:
            if isinstance(event, TextDeltaEvent) and not cancels:
                cancels.append(asyncio.ensure_future(h.cancel(session)))

        cancelled = await h.run("go", session_id=session, on_event=stop_at_text)
        after = await h.run("again", session_id=session)
    assert cancelled.finish_reason == "aborted"
    assert after.final_response == "next"


async def test_a_session_continues_in_another_runtime(tmp_path: Path) -> None:
    async with OpenAIServer(["first answer", "second answer", "third"]) as server:
        async with harness(tmp_path, server) as h:
            await h.run("remember 42", session_id="session-kept")
        async with harness(tmp_path, server) as h:  # same session root, a new process
            second = await h.run("what was it?", session_id="session-kept")
        async with harness(tmp_path, server) as h:
            await h.resume("session-kept")
            third = await h.run("and now?", session_id="session-kept")
    assert second.final_response == "second answer" and third.final_response == "third"
    history = server.requests[1].raw.decode()
    assert "remember 42" in history and "first answer" in history
    assert "second answer" in server.requests[2].raw.decode()


async def test_the_sync_harness_streams_and_cancels(tmp_path: Path) -> None:
    async with OpenAIServer([reply("stop me", hang=True), "done"]) as server:

        def drive() -> tuple[str | None, str]:
            env = env_for(tmp_path, server.base_url)
            options = {"provider": "deepseek-official", "model": "m", "cwd": str(tmp_path)}
            with Harness(**options, env=env) as h:
                asked: list[bool] = []

                def stop(event: TypedEvent) -> None:
                    if isinstance(event, TextDeltaEvent) and not asked:
                        asked.append(True)
                        h.cancel("session-sync")  # on the harness's own thread

                first = h.run("go", session_id="session-sync", on_event=stop)
                second = h.run("again", session_id="session-sync")
            return first.finish_reason, second.final_response

        assert await asyncio.to_thread(drive) == ("aborted", "done")


def test_async_harness_names_its_runtime() -> None:
    assert AsyncHarness(provider="p", model="m").command[-1] == "dsh.server"


def test_the_client_imports_no_runtime() -> None:
    """A driver process pays for the client only: the kernel, llm and pydantic stay out."""
    import subprocess
    import sys

    code = (
        "import sys, dsh.client\n"
        "print(sorted(m for m in sys.modules if m.startswith(('dsh.kernel', 'dsh.llm', "
        "'pydantic'))))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.stdout.strip() == "[]", result.stderr
