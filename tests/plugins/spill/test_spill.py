"""Spill files: an oversized result becomes a preview plus a path that `read` reads, kept
where the persistence service keeps the session (its JSONL folder, the SQLite blob table, or
a temporary folder that goes with the session)."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from dsh.agent import AgentOptions, CreateAgentOptions, run_prompt
from dsh.kernel import read_secret
from dsh.llm import GenerateOptions
from dsh.persistence import PersistencePlugin, project_dir_name
from dsh.plugins.spill import SpillPlugin, preview
from dsh.profiles import CORE_ROWS, boot, load_profile
from dsh.session import SESSION_DISPOSED, SessionMeta
from dsh.testing import ScriptedModel, reply, tool_call
from dsh.tools import tool
from tests.conftest import mode
from tests.tools.builtin.conftest import MakeTools, Tools
from tests.tools.builtin.test_bash import bash

Make = Callable[..., Any]
ALLOW_ALL = {"tool": "*", "action": "allow"}
SAVED = re.compile(r"saved at (\S+) — read it")
TRUNCATED = re.compile(r"full output: (\S+) \(([\d,]+) bytes; read it with the read tool")


def numbered(lines: int) -> str:
    return "".join(f"line {n} {'x' * 40}\n" for n in range(1, lines + 1))


@tool
def big(lines: int) -> str:
    """Print numbered lines."""
    return numbered(lines)


@pytest.fixture
def make(make_tools: MakeTools, tmp_path: Path) -> Make:
    """The built-in tools, `big`, and spills in a store: `jsonl`, `sqlite` or `none`."""

    async def build(store: str = "jsonl", config: dict[str, Any] | None = None) -> Tools:
        stores = {
            "jsonl": {"backend": "jsonl", "root": str(tmp_path / "sessions")},
            "sqlite": {"backend": "sqlite", "path": str(tmp_path / "sessions.sqlite3")},
        }
        plugins: list[tuple[Any, dict[str, Any]]] = [(SpillPlugin, config or {})]
        if store in stores:
            plugins.insert(0, (PersistencePlugin, stores[store]))
        tools: Tools = await make_tools(plugins=plugins)
        tools.ctx.tools.register(big)
        return tools

    return build


def contents(path: str | Path) -> str | None:
    """What the file holds, None when it does not exist."""
    return Path(path).read_text() if Path(path).exists() else None


async def read_all(tools: Tools, path: str, offset: int) -> str:
    text = await tools.ok("read", {"file_path": path, "offset": offset})
    assert text.startswith(f"<path>{path}</path>")
    return text


async def test_a_bash_command_printing_1_mb_gives_the_tail_and_a_path_read_reads(
    make: Make, tmp_path: Path
) -> None:
    tools = await make()
    text = await tools.ok("bash", bash("seq 1 150000"))
    total = sum(len(str(n)) + 1 for n in range(1, 150_001))  # 938,895 bytes
    assert "\n149999\n150000\n" in text  # the tail
    path, size = TRUNCATED.search(text).groups()  # type: ignore[union-attr]
    assert size == f"{total:,}"
    assert "read tool" in text
    session = tools.agent.session  # type: ignore[union-attr]
    folder = tmp_path / "sessions" / project_dir_name(str(tools.root)) / session.id / "spill"
    assert Path(path).parent == folder
    assert len((contents(path) or "").encode()) == total
    page = await read_all(tools, path, 1000)
    assert "<content>\n1000\n1001\n" in page
    assert "(Showing lines 1000-2999 of 150000. Use offset=3000 to continue.)" in page


async def test_a_large_result_becomes_head_tail_size_and_path(make: Make) -> None:
    tools = await make()
    text = await tools.ok("big", {"lines": 2000})
    assert len(text) < 30_000
    head, rest = text.split("[…]\n")
    assert head.startswith("line 1 x") and head.endswith("\n")
    assert "line 2000 x" in rest
    assert "100,893 characters in 2,000 lines" in rest
    path = SAVED.search(text).group(1)  # type: ignore[union-attr]
    shown = head.count("\n")
    assert f"offset={shown + 1} continues after the head" in rest
    page = await read_all(tools, path, shown + 1)
    assert f"\nline {shown + 1} x" in page
    assert contents(path) == numbered(2000)


async def test_small_results_and_read_results_are_left_alone(make: Make) -> None:
    tools = await make(config={"max_chars": 1000, "head_chars": 100, "tail_chars": 100})
    assert await tools.ok("big", {"lines": 5}) == numbered(5)
    (tools.root / "long.txt").write_text("y\n" * 600)
    text = await tools.ok("read", {"file_path": "long.txt"})
    assert "saved at" not in text and len(text) > 1000


async def test_read_of_other_paths_outside_the_workspace_is_still_refused(
    make: Make, tmp_path: Path
) -> None:
    tools = await make()
    (tmp_path / "sessions").mkdir(exist_ok=True)
    elsewhere = tmp_path / "sessions" / "not-a-spill.txt"
    elsewhere.write_text("no")
    message = await tools.error("read", {"file_path": str(elsewhere)})
    assert "is outside the workspace" in message


async def test_sqlite_keeps_spills_in_its_blob_table(make: Make) -> None:
    tools = await make("sqlite")
    text = await tools.ok("big", {"lines": 2000})
    path = SAVED.search(text).group(1)  # type: ignore[union-attr]
    assert contents(path) == numbered(2000)
    # The session ends here: its local copy goes; the blob table keeps the output.
    tools.ctx.emit(SESSION_DISPOSED, tools.agent.session)  # type: ignore[union-attr]
    assert contents(path) is None
    page = await read_all(tools, path, 1990)
    assert "\nline 2000 x" in page
    assert contents(path) == numbered(2000)


@pytest.mark.usefixtures("umask_022")
@pytest.mark.parametrize("store", ["jsonl", "sqlite", "none"])
async def test_spill_files_are_0600_in_folders_0700(make: Make, store: str) -> None:
    tools = await make(store)
    text = await tools.ok("big", {"lines": 2000})
    path = Path(SAVED.search(text).group(1))  # type: ignore[union-attr]
    assert contents(path) == numbered(2000)
    assert mode(path) == 0o600
    assert mode(path.parent) == 0o700  # spill/ (JSONL), the session's cache folder (others)
    if store == "jsonl":
        assert mode(path.parent.parent) == 0o700  # the session folder
    bash_text = await tools.ok("bash", bash("seq 1 150000"))
    streamed = Path(TRUNCATED.search(bash_text).group(1))  # type: ignore[union-attr]
    assert mode(streamed) == 0o600


async def test_without_persistence_spills_go_with_the_session(make: Make) -> None:
    tools = await make("none")
    text = await tools.ok("big", {"lines": 2000})
    path = SAVED.search(text).group(1)  # type: ignore[union-attr]
    assert contents(path) == numbered(2000)
    tools.ctx.emit(SESSION_DISPOSED, tools.agent.session)  # type: ignore[union-attr]
    assert contents(path) is None
    assert "is outside the workspace" in await tools.error("read", {"file_path": path})


async def test_secrets_are_masked_in_the_spill_file(
    make: Make, monkeypatch: pytest.MonkeyPatch
) -> None:
    name, key = "DSH_TEST_SPILL_KEY", "sk-spill-secret-123456"
    monkeypatch.setenv(name, key)
    assert read_secret(name) == key
    try:
        tools = await make()

        @tool
        def leaky() -> str:
            """Print a key many times."""
            return f"{key}\n" * 3000

        tools.ctx.tools.register(leaky)
        text = await tools.ok("leaky", {})
        saved = contents(SAVED.search(text).group(1)) or ""  # type: ignore[union-attr]
        assert key not in saved and saved.startswith(f"[redacted {name}]\n")
    finally:
        monkeypatch.delenv(name)
        assert read_secret(name) is None  # dsh forgets it


def test_the_preview_cuts_at_line_ends() -> None:
    text = "".join(f"{n}\n" for n in range(1, 1001))
    shown = preview(text, 100, 50)
    assert shown.head.endswith("\n") and shown.tail.startswith(str(shown.tail_from))
    assert shown.head_lines == shown.head.count("\n") and shown.total_lines == 1000


async def test_the_loop_sends_the_model_the_preview_and_the_model_reads_on(tmp_path: Path) -> None:
    rows = [
        *CORE_ROWS,
        {"id": "persistence", "name": "persistence", "config": {"root": str(tmp_path / "s")}},
        {"id": "builtin-tools", "name": "builtin_tools"},
        {"id": "spill", "name": "spill"},
        {"id": "approval", "name": "approval", "config": {"policy": [ALLOW_ALL]}},
    ]
    ctx = await boot(load_profile(base=rows))
    ws = tmp_path / "ws"
    ws.mkdir()
    # 300 long matching lines: grep shows 250 of them, over 50,000 characters.
    (ws / "data.txt").write_text("".join(f"row {n} {'z' * 200}\n" for n in range(1, 301)))

    def read_on(options: GenerateOptions) -> Any:
        [result] = options.messages[-1].content
        path = SAVED.search(result.content[0].text).group(1)  # type: ignore[attr-defined,union-attr]
        return reply(tool_call("read", {"file_path": path, "offset": 250}))

    model = ScriptedModel(
        [reply(tool_call("grep", {"pattern": "row", "path": "data.txt"})), read_on, "done"]
    )
    model.install(ctx)
    try:
        handle = await ctx.agents.create(
            CreateAgentOptions(
                "session-spill",
                SessionMeta(cwd=str(ws)),
                agent_options=AgentOptions(provider="scripted", model="scripted"),
            )
        )
        result = await run_prompt(handle.agent, "find rows")
        assert result.finish_reason == "completed"
        model.assert_complete()
        results = [e for e in handle.agent.session.events if e.type == "tool/result"]
        first = results[0].data["message"]["content"][0]["content"][0]["text"]
        assert "Output too large to show whole" in first
        second = results[1].data["message"]["content"][0]["content"][0]["text"]
        assert "Line 250: row 250 zzz" in second and "(End of file - total" in second
        await handle.dispose()
    finally:
        await ctx.owner.dispose()
