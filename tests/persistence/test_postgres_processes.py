"""The PostgreSQL store across real processes: every entry point selects it from
`DSH_SESSION_STORE`; one live writer per session; a writer killed with SIGKILL frees its lease
at once and its log is repaired by the next writer."""

from __future__ import annotations

import asyncio
import signal
import sys
from pathlib import Path

import psycopg

from dsh.client import AsyncHarness
from dsh.persistence import PostgresBackend, StoredSessions
from dsh.plugins.invariants import LogState, check_event
from dsh.testing import OpenAIServer, reply, tool_call
from tests.cli.support import DSH, loopback_env, run_dsh


def invariant_problems(events: list[object]) -> list[str]:
    state = LogState()
    return [problem for event in events for problem in check_event(state, event)]  # type: ignore[arg-type]


async def test_every_entry_point_uses_the_store_named_by_the_environment(
    tmp_path: Path, postgres_url: str
) -> None:
    async with OpenAIServer(["From JSON-RPC.", "From the CLI."]) as server:
        env = loopback_env(tmp_path, server.base_url, DSH_SESSION_STORE=postgres_url)
        async with AsyncHarness(
            provider="deepseek-official", model="m", cwd=str(tmp_path), env=env
        ) as harness:
            result = await harness.run("hello", session_id="session-jsonrpc")
        assert result.final_response == "From JSON-RPC."
        code, _, err = await run_dsh(env, "run", "hello", "--cwd", str(tmp_path))
        assert code == 0, err
        code, listed, err = await run_dsh(env, "sessions", "list")
    assert code == 0, err
    assert "session-jsonrpc" in listed
    backend = PostgresBackend(postgres_url)
    try:
        ids = [h["id"] for h in backend.headers()]
    finally:
        backend.close()
    assert len(ids) == 2 and "session-jsonrpc" in ids
    assert not (tmp_path / ".dsh").exists()  # nothing went to the default JSONL root


async def test_one_writer_per_session_and_a_killed_writer_frees_it(
    tmp_path: Path, postgres_url: str
) -> None:
    (tmp_path / "notes.txt").write_text("remember the tulip\n")
    script = [
        "Noted.",
        reply(tool_call("read", {"file_path": "notes.txt"})),
        reply("thinking", hang=True),  # the writer is killed while it waits here
        "Recovered.",
    ]
    async with OpenAIServer(script) as server:
        env = loopback_env(tmp_path, server.base_url, DSH_SESSION_STORE=postgres_url)
        code, _, err = await run_dsh(env, "run", "take a note", "--cwd", str(tmp_path))
        assert code == 0, err
        session_id = err.split("session ")[-1].split(" ")[0]

        third_request = asyncio.Event()
        server.on_request = lambda _: third_request.set() if len(server.requests) == 3 else None
        writer = await asyncio.create_subprocess_exec(
            sys.executable, *DSH, "sessions", "resume", session_id, "read the notes",
            env=env, stdout=-1, stderr=-1,
        )  # fmt: skip
        await asyncio.wait_for(third_request.wait(), 60)  # live, inside a turn

        code, _, err = await run_dsh(env, "sessions", "resume", session_id, "me too")
        assert code == 2
        assert err.startswith(f"dsh: session {session_id!r} is being written by ")
        assert f"pid {writer.pid} (since " in err
        assert len(err.strip().splitlines()) == 1

        writer.send_signal(signal.SIGKILL)
        await writer.wait()
        await lease_freed(postgres_url, session_id)
        code, out, err = await run_dsh(env, "sessions", "resume", session_id, "go on")
        assert code == 0, err
        assert out.strip() == "Recovered."

    backend = PostgresBackend(postgres_url)
    try:
        log = await StoredSessions(backend).inspect(session_id)
    finally:
        backend.close()
    types = [e.type for e in log.events]
    interrupted = [e for e in log.events if e.type == "turn/end" and e.data["turn"] == 2]
    assert interrupted[0].data["reason"] == {"kind": "interrupted"}
    assert types[types.index("turn/end", types.index("tool/result")) + 1] == "session/end-seed"
    assert log.events[-1].type == "turn/end"
    assert log.events[-1].data["reason"] == {"kind": "completed"}
    assert invariant_problems(list(log.events)) == []


async def lease_freed(url: str, session_id: str) -> None:
    """Wait (bounded) until nobody holds the session's advisory lock: the server frees a
    killed client's locks when it sees its connection close."""
    backend = PostgresBackend(url)
    try:
        key = backend._key(session_id)
    finally:
        backend.close()
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        await conn.execute("SET lock_timeout = '10s'")
        await conn.execute("SELECT pg_advisory_lock(%s)", (key,))
        await conn.execute("SELECT pg_advisory_unlock(%s)", (key,))
