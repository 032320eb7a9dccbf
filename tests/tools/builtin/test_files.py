"""`read`, `write`, `edit`: renderings, caps and footers, read-before-write, confinement."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsh.tools.builtin import ReadConfig, _read, read_tool
from dsh.tools.builtin._observations import FileObservations

from .conftest import MakeTools, StandInAgent, Tools


def read_view(path: Path, body: str) -> str:
    return f"<path>{path}</path>\n<type>file</type>\n<content>\n{body}\n</content>"


# -- read ---------------------------------------------------------------------------------------


@pytest.fixture
async def numbered(make_tools: MakeTools) -> Tools:
    """The built-in tools with `read` numbering its lines (the reference's exact rendering)."""
    result: Tools = await make_tools({"read": {"line_numbers": True}})
    return result


async def test_read_shows_the_text_as_it_is_by_default(tools: Tools) -> None:
    path = tools.root / "a.txt"
    path.write_text("alpha\nbeta\r\n\ngamma")
    text = await tools.ok("read", {"file_path": "a.txt"})
    assert text == read_view(path, "alpha\nbeta\n\ngamma\n\n(End of file - total 4 lines)")
    window = await tools.ok("read", {"file_path": "a.txt", "offset": 2, "limit": 1})
    footer = "(Showing lines 2-2 of 4. Use offset=3 to continue.)"
    assert window == read_view(path, f"beta\n\n{footer}")
    [definition] = [d for d in tools.ctx.tools.schemas() if d.name == "read"]
    assert "N: text" not in definition.description


async def test_read_renders_numbered_lines(numbered: Tools) -> None:
    tools = numbered
    path = tools.root / "a.txt"
    path.write_text("alpha\nbeta\r\n\ngamma")
    text = await tools.ok("read", {"file_path": "a.txt"})
    assert text == read_view(
        path, "1: alpha\n2: beta\n3: \n4: gamma\n\n(End of file - total 4 lines)"
    )
    [definition] = [d for d in tools.ctx.tools.schemas() if d.name == "read"]
    assert "numbered `N: text`" in definition.description


async def test_read_empty_file_and_final_newline(numbered: Tools) -> None:
    tools = numbered
    (tools.root / "empty").write_text("")
    (tools.root / "nl").write_text("\n")
    assert await tools.ok("read", {"file_path": "empty"}) == read_view(
        tools.root / "empty", "(End of file - total 0 lines)"
    )
    assert await tools.ok("read", {"file_path": "nl"}) == read_view(
        tools.root / "nl", "1: \n\n(End of file - total 1 lines)"
    )


async def test_read_window_footers(numbered: Tools) -> None:
    tools = numbered
    path = tools.root / "n.txt"
    path.write_text("".join(f"line {i}\n" for i in range(1, 11)))
    text = await tools.ok("read", {"file_path": str(path), "offset": 3, "limit": 2})
    assert text == read_view(
        path, "3: line 3\n4: line 4\n\n(Showing lines 3-4 of 10. Use offset=5 to continue.)"
    )
    tail = await tools.ok("read", {"file_path": "n.txt", "offset": 9.0})
    assert tail.endswith("9: line 9\n10: line 10\n\n(End of file - total 10 lines)\n</content>")


async def test_read_caps_lines_at_2000_by_default(numbered: Tools) -> None:
    tools = numbered
    (tools.root / "long.txt").write_text("x\n" * 2500)
    text = await tools.ok("read", {"file_path": "long.txt"})
    assert "\n2000: x\n\n(Showing lines 1-2000 of 2500. Use offset=2001 to continue.)" in text
    assert "2001: " not in text


async def test_read_caps_bytes_and_long_lines(numbered: Tools) -> None:
    tools = numbered
    line = "é" * 2500  # 2000 chars kept = 4000 bytes a line
    (tools.root / "wide.txt").write_text((line + "\n") * 40)
    text = await tools.ok("read", {"file_path": "wide.txt"})
    shown = [row for row in text.splitlines() if row[:1].isdigit()]
    assert shown[0] == "1: " + "é" * 2000 + "... (line truncated to 2000 chars)"
    per_line = len(shown[0].split(": ", 1)[1].encode())
    assert len(shown) == 51_200 // (per_line + 1)
    n = len(shown)
    assert f"(Output capped. Showing lines 1-{n}. Use offset={n + 1} to continue.)" in text


async def test_a_small_file_is_read_on_the_loop_a_large_one_in_a_thread(
    tools: Tools, monkeypatch: pytest.MonkeyPatch
) -> None:
    handed_off: list[str] = []

    async def to_thread(function: Any, where: Any, *args: Any) -> Any:
        handed_off.append(os.path.basename(where.real))
        return function(where, *args)

    monkeypatch.setattr(_read.asyncio, "to_thread", to_thread)
    (tools.root / "small.txt").write_text("x\n" * 10)
    (tools.root / "large.txt").write_text("x\n" * (_read.INLINE_BYTES // 2 + 1))
    assert "(End of file - total 10 lines)" in await tools.ok("read", {"file_path": "small.txt"})
    assert "Showing lines 1-2000" in await tools.ok("read", {"file_path": "large.txt"})
    assert handed_off == ["large.txt"]


async def test_read_errors(tools: Tools) -> None:
    root = tools.root
    (root / "bin").write_bytes(b"abc\0def")
    (root / "latin").write_bytes(b"caf\xe9\n")
    (root / "dir").mkdir()
    (root / "three").write_text("1\n2\n3\n")
    os.mkfifo(root / "pipe")
    cases = {
        "pipe": f'cannot read "{root / "pipe"}": not a regular file',
        "missing": f'cannot read "{root / "missing"}": not found',
        "dir": f'cannot read "{root / "dir"}": not a regular file',
        "bin": f'cannot read "{root / "bin"}": binary file',
        "latin": f'cannot read "{root / "latin"}": invalid UTF-8 text',
    }
    for name, message in cases.items():
        assert await tools.error("read", {"file_path": name}) == message
    assert await tools.error("read", {"file_path": "three", "offset": 5}) == (
        f'offset 5 is out of range for "{root / "three"}" (3 lines)'
    )
    assert await tools.error("read", {"file_path": " "}) == "file_path must be a non-empty string"
    assert await tools.error("read", {"file_path": "three", "offset": 0}) == (
        "offset must be a positive integer"
    )
    assert await tools.error("read", {"file_path": "three", "offset": 1.5}) == (
        "offset must be a positive integer"
    )
    assert await tools.error("read", {"file_path": "three", "limit": -1}) == (
        "limit must be a positive integer"
    )
    assert await tools.error("read", {"file_path": "three", "limit": 2001}) == (
        "limit must be less than or equal to 2000"
    )


async def test_read_utf8_cut_at_the_sniff_boundary_is_text(tools: Tools) -> None:
    (tools.root / "cut").write_text("a" * 8191 + "é\n")
    assert "(End of file - total 1 lines)" in await tools.ok("read", {"file_path": "cut"})


@settings(max_examples=60, deadline=None)
@given(text=st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\0")))
def test_read_window_agrees_with_splitlines(text: str) -> None:
    import asyncio
    import tempfile

    from dsh.kernel import CancelSignal
    from dsh.tools import ToolRunContext

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder, "f.txt")
        path.write_bytes(text.encode())
        definition = read_tool(FileObservations(), ReadConfig())
        run = ToolRunContext("c", "read", {}, CancelSignal(), StandInAgent(Path(folder)))
        value = asyncio.run(definition.execute({"file_path": "f.txt"}, run))  # type: ignore[arg-type]
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    assert value["totalLines"] == len(lines)  # type: ignore[index, call-overload]
    for row in value["lines"]:  # type: ignore[index, call-overload]
        expected = lines[row["number"] - 1].removesuffix("\r")
        if len(expected) > 2000:
            expected = expected[:2000] + "... (line truncated to 2000 chars)"
        assert row["text"] == expected


# -- write --------------------------------------------------------------------------------------


async def test_write_creates_and_updates(tools: Tools) -> None:
    target = tools.root / "deep" / "new.txt"
    created = await tools.ok("write", {"file_path": "deep/new.txt", "content": "one\n"})
    assert created == read_view(target, "Created file")
    assert target.read_text() == "one\n"
    # What this session wrote counts as seen.
    updated = await tools.ok("write", {"file_path": "deep/new.txt", "content": ""})
    assert updated == read_view(target, "Updated file")
    assert target.read_text() == ""


async def test_write_over_an_unread_file_is_refused(tools: Tools) -> None:
    path = tools.root / "old.txt"
    path.write_text("keep")
    message = await tools.error("write", {"file_path": "old.txt", "content": "x"})
    assert message == (
        f'cannot overwrite existing "{path}" without reading it first — read the file, then retry'
    )
    assert path.read_text() == "keep"
    await tools.ok("read", {"file_path": "old.txt"})
    await tools.ok("write", {"file_path": "old.txt", "content": "x"})
    assert path.read_text() == "x"


async def test_write_after_a_change_is_refused(tools: Tools) -> None:
    path = tools.root / "f.txt"
    path.write_text("v1")
    await tools.ok("read", {"file_path": "f.txt"})
    path.write_text("v2 changed")
    message = await tools.error("write", {"file_path": "f.txt", "content": "x"})
    assert message == (
        f'cannot write "{path}": file changed since it was read — re-read the file, then retry'
    )
    path.unlink()
    message = await tools.error("write", {"file_path": "f.txt", "content": "x"})
    assert message == (
        f'cannot write "{path}": file no longer exists — re-read the file, then retry'
    )


async def test_reads_are_per_session(tools: Tools) -> None:
    (tools.root / "f.txt").write_text("v1")
    await tools.ok("read", {"file_path": "f.txt"})
    other = StandInAgent(tools.root)
    message = await tools.error("write", {"file_path": "f.txt", "content": "x"}, agent=other)
    assert message.startswith("cannot overwrite existing")


async def test_write_preserves_the_mode(tools: Tools) -> None:
    path = tools.root / "run.sh"
    path.write_text("#!/bin/sh\n")
    path.chmod(0o751)
    await tools.ok("read", {"file_path": "run.sh"})
    await tools.ok("write", {"file_path": "run.sh", "content": "#!/bin/sh\necho hi\n"})
    assert path.stat().st_mode & 0o777 == 0o751
    assert not [p for p in tools.root.iterdir() if p.name.startswith(".dsh-")]


# -- edit ---------------------------------------------------------------------------------------


async def test_edit_replaces_one_unique_occurrence(tools: Tools) -> None:
    path = tools.root / "e.py"
    path.write_text("a = 1\nb = 2\n")
    await tools.ok("read", {"file_path": "e.py"})
    text = await tools.ok(
        "edit", {"file_path": "e.py", "old_string": "b = 2", "new_string": "b = 3"}
    )
    assert text == f"The file {path} has been updated successfully."
    assert path.read_text() == "a = 1\nb = 3\n"
    # Just edited: editing again needs no new read.
    await tools.ok("edit", {"file_path": "e.py", "old_string": "a = 1\n", "new_string": ""})
    assert path.read_text() == "b = 3\n"


async def test_edit_ambiguity_and_replace_all(tools: Tools) -> None:
    path = tools.root / "e.txt"
    path.write_text("x x x\n")
    await tools.ok("read", {"file_path": "e.txt"})
    args = {"file_path": "e.txt", "old_string": "x", "new_string": "y"}
    assert await tools.error("edit", args) == (
        f'old_string matched 3 times in "{path}"; provide a more specific old_string or set '
        "replace_all to true"
    )
    text = await tools.ok("edit", {**args, "replace_all": True})
    assert text == f"The file {path} has been updated. All occurrences were successfully replaced."
    assert path.read_text() == "y y y\n"
    assert await tools.error("edit", args) == f'old_string was not found in "{path}"'


async def test_edit_keeps_crlf_files_crlf(tools: Tools) -> None:
    path = tools.root / "w.txt"
    path.write_bytes(b"one\r\ntwo\r\nthree\r\n")
    await tools.ok("read", {"file_path": "w.txt"})
    await tools.ok("edit", {"file_path": "w.txt", "old_string": "one\ntwo", "new_string": "1\n2"})
    assert path.read_bytes() == b"1\r\n2\r\nthree\r\n"


async def test_edit_requires_a_current_read(tools: Tools) -> None:
    path = tools.root / "e.txt"
    path.write_text("hello\n")
    args = {"file_path": "e.txt", "old_string": "hello", "new_string": "bye"}
    assert await tools.error("edit", args) == (
        f'edit requires reading "{path}" first — read the file, then retry'
    )
    await tools.ok("read", {"file_path": "e.txt", "limit": 1})
    path.write_text("hello again\n")
    assert await tools.error("edit", args) == (
        f'cannot edit "{path}": file changed since it was read — re-read the file, then retry'
    )
    assert await tools.error("edit", {**args, "file_path": "none"}) == (
        f'cannot edit "{tools.root / "none"}": not found'
    )


async def test_edit_argument_errors(tools: Tools) -> None:
    base = {"file_path": "f", "old_string": "a", "new_string": "b"}
    assert await tools.error("edit", {**base, "old_string": ""}) == (
        "old_string must be a non-empty string"
    )
    assert await tools.error("edit", {**base, "new_string": "a"}) == (
        "old_string and new_string must differ"
    )


async def test_edit_refuses_binary(tools: Tools) -> None:
    path = tools.root / "b.txt"
    await tools.ok("write", {"file_path": "b.txt", "content": "te\0xt\n"})
    message = await tools.error(
        "edit", {"file_path": "b.txt", "old_string": "t", "new_string": "T"}
    )
    assert message == f'cannot edit "{path}": binary file'


# -- confinement --------------------------------------------------------------------------------


@pytest.mark.parametrize("tool", ["read", "write", "edit"])
async def test_escapes_are_denied(tools: Tools, tmp_path: Path, tool: str) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("secret")
    os.symlink(secret, tools.root / "link.txt")
    os.symlink(tmp_path, tools.root / "dirlink")
    args = {"content": "x", "old_string": "secret", "new_string": "x"}
    for path in ("../secret.txt", str(secret), "link.txt", "dirlink/secret.txt", "/etc/hostname"):
        message = await tools.error(tool, {"file_path": path, **args})
        assert "is outside the workspace (allowed: " in message, message
    assert secret.read_text() == "secret"


async def test_a_symlink_inside_the_workspace_is_fine(tools: Tools) -> None:
    (tools.root / "real.txt").write_text("ok\n")
    os.symlink(tools.root / "real.txt", tools.root / "alias.txt")
    text = await tools.ok("read", {"file_path": "alias.txt"})
    assert text.startswith(f"<path>{tools.root / 'alias.txt'}</path>")


async def test_extra_roots_are_allowed(make_tools: MakeTools, tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "notes.md").write_text("hi\n")
    tools = await make_tools({"extra_roots": [str(shared)]})
    assert "\nhi\n" in await tools.ok("read", {"file_path": str(shared / "notes.md")})
    plain = await make_tools(root=tmp_path / "other")
    assert "outside the workspace" in await plain.error(
        "read", {"file_path": str(shared / "notes.md")}
    )


async def test_no_session_cwd_falls_back_to_the_process_cwd(
    tools: Tools, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tools.root)
    (tools.root / "p.txt").write_text("proc\n")
    for agent in (None, StandInAgent(None)):
        text = await tools.ok("read", {"file_path": "p.txt"}, agent=agent)
        assert "\nproc\n" in text
