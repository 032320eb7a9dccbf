"""`glob` and `grep`, each test run on both backends (ripgrep when installed, Python)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from .conftest import HAS_RG, MakeTools, Tools


def tree(root: Path, files: dict[str, str | bytes]) -> None:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)


def age(root: Path, order: list[str]) -> None:
    """Give paths increasing modification times in the order listed (oldest first)."""
    for i, name in enumerate(order):
        os.utime(root / name, (1_600_000_000 + i * 100, 1_600_000_000 + i * 100))


# -- glob ---------------------------------------------------------------------------------------


async def test_glob_lists_files_at_any_depth_in_mtime_order(search: Tools) -> None:
    root = search.root
    tree(root, {"b.py": "", "a/x.py": "", "a/y.txt": "", ".hidden/h.py": "", "z.py": ""})
    (root / ".gitignore").write_text("z.py\n")
    (root / ".git").mkdir()
    (root / ".git" / "hook.py").write_text("")
    os.symlink(root / "b.py", root / "link.py")
    age(root, ["a/x.py", "a/y.txt", "z.py", "b.py", ".hidden/h.py", "a", ".hidden"])
    text = await search.ok("glob", {"pattern": "*.py"})
    # Depth-first, each directory's entries oldest first; ignored and hidden files included.
    assert text.splitlines() == ["z.py", "b.py", "a/x.py", ".hidden/h.py"]


async def test_glob_anchored_patterns_and_paths(search: Tools) -> None:
    root = search.root
    tree(root, {"src/a.py": "", "src/deep/b.py": "", "lib/src/c.py": ""})
    age(root, ["src/a.py", "src/deep/b.py", "lib/src/c.py"])
    assert (await search.ok("glob", {"pattern": "src/*.py"})).splitlines() == ["src/a.py"]
    deep = await search.ok("glob", {"pattern": "src/**/*.py"})
    assert sorted(deep.splitlines()) == ["src/a.py", "src/deep/b.py"]
    under = await search.ok("glob", {"pattern": "*.py", "path": "src"})
    assert sorted(under.splitlines()) == ["src/a.py", "src/deep/b.py"]
    alternation = await search.ok("glob", {"pattern": "{a,c}.py"})
    assert sorted(alternation.splitlines()) == ["lib/src/c.py", "src/a.py"]
    assert await search.ok("glob", {"pattern": "*.rs"}) == "No files found"


async def test_glob_shows_100_paths(search: Tools) -> None:
    tree(search.root, {f"f{i:03}.txt": "" for i in range(130)})
    lines = (await search.ok("glob", {"pattern": "*.txt"})).split("\n")
    assert len(lines) == 102
    assert lines[100] == ""
    assert lines[101] == (
        "(Showing 100 of 130 paths. The complete result could not be saved; narrow pattern or "
        "path to see more.)"
    )


async def test_glob_value_and_errors(search: Tools, tmp_path: Path) -> None:
    tree(search.root, {"d/a.md": ""})
    result = await search.call("glob", {"pattern": "*.md", "path": "d"})
    assert result.value == {"root": "d", "paths": ["d/a.md"]}  # type: ignore[union-attr]
    assert await search.error("glob", {"pattern": " "}) == "pattern must be a non-empty string"
    assert await search.error("glob", {"pattern": "*", "path": ""}) == (
        "path must be a non-empty string when given"
    )
    assert await search.error("glob", {"pattern": "*", "path": "nope"}) == (
        f'glob search failed: "{search.root / "nope"}" does not exist'
    )
    assert "is outside the workspace" in await search.error(
        "glob", {"pattern": "*", "path": str(tmp_path)}
    )


# -- grep ---------------------------------------------------------------------------------------


async def test_grep_groups_matches_by_file(search: Tools) -> None:
    tree(search.root, {"a.py": "foo = 1\nbar\nfoo()\n", "b/c.txt": "nothing\nfood\n"})
    text = await search.ok("grep", {"pattern": "fo+"})
    blocks = text.split("\n\n")
    assert blocks[0] == "Found 3 matches"
    assert sorted(blocks[1:]) == ["a.py\nLine 1: foo = 1\nLine 3: foo()", "b/c.txt\nLine 2: food"]
    one = await search.ok("grep", {"pattern": "^bar$", "path": "a.py"})
    assert one == "Found 1 match\n\na.py\nLine 2: bar"
    assert await search.ok("grep", {"pattern": "zzz"}) == "No matches found"


async def test_grep_skips_hidden_binary_and_ignored(search: Tools) -> None:
    root = search.root
    tree(
        root,
        {
            "keep.txt": "needle\n",
            ".hidden.txt": "needle\n",
            ".dir/x.txt": "needle\n",
            "bin.dat": b"needle\0\n",
            "build/out.txt": "needle\n",
            "skip.log": "needle\n",
            "notes.tmp": "needle\n",
        },
    )
    (root / ".gitignore").write_text("build/\n*.log\n")
    (root / ".ignore").write_text("*.tmp\n")
    outside_repo = await search.ok("grep", {"pattern": "needle"})
    files = {b.split("\n")[0] for b in outside_repo.split("\n\n")[1:]}
    assert files == {"keep.txt", "build/out.txt", "skip.log"}  # .gitignore needs a repository
    (root / ".git").mkdir()
    in_repo = await search.ok("grep", {"pattern": "needle"})
    assert in_repo == "Found 1 match\n\nkeep.txt\nLine 1: needle"
    negated = root / "build" / ".gitignore"
    negated.write_text("")
    (root / ".gitignore").write_text("*.log\n!skip.log\n")
    again = await search.ok("grep", {"pattern": "needle"})
    assert {b.split("\n")[0] for b in again.split("\n\n")[1:]} == {
        "keep.txt",
        "build/out.txt",
        "skip.log",
    }


async def test_grep_include_filter(search: Tools) -> None:
    tree(search.root, {"a.py": "x\n", "b.ts": "x\n", "c.tsx": "x\n", "d/e.py": "x\n"})
    py = await search.ok("grep", {"pattern": "x", "include": "*.py"})
    assert py.startswith("Found 2 matches")
    assert "b.ts" not in py
    ts = await search.ok("grep", {"pattern": "x", "include": "*.{ts,tsx}"})
    assert ts.startswith("Found 2 matches") and "a.py" not in ts
    errors = {
        " ": "include must be a non-empty glob when given",
        "!*.py": 'include must be a positive glob filter; negated patterns ("!…") are not '
        "supported",
        "*.py,*.ts": "include must be one glob, not a comma-separated list (use {a,b} "
        "alternation instead)",
    }
    for include, message in errors.items():
        assert await search.error("grep", {"pattern": "x", "include": include}) == message


async def test_grep_caps_matches_and_lines(search: Tools) -> None:
    tree(search.root, {"many.txt": "hit\n" * 300, "wide.txt": "hit" + "é" * 1500 + "\n"})
    text = await search.ok("grep", {"pattern": "hit", "path": "many.txt"})
    lines = text.split("\n")
    assert lines[0] == "Found 250 of 300 matches"
    assert lines[-1] == (
        "(The complete result could not be saved; narrow pattern, path, or include to see more.)"
    )
    assert lines[-3] == "Line 250: hit"
    wide = await search.ok("grep", {"pattern": "hit", "path": "wide.txt"})
    row = wide.split("\n")[-1]
    assert row.endswith(" (line truncated)")
    shown = row.removeprefix("Line 1: ").removesuffix(" (line truncated)")
    assert len(shown.encode()) <= 2000 and shown.startswith("hit")


async def test_grep_non_utf8_lines(search: Tools) -> None:
    tree(search.root, {"latin.txt": b"caf\xe9 needle\nplain needle\r\n"})
    text = await search.ok("grep", {"pattern": "needle"})
    assert text == (
        "Found 2 matches\n\nlatin.txt\nLine 1: (line is not valid UTF-8)\nLine 2: plain needle"
    )


async def test_non_utf8_file_names_become_valid_text(search: Tools) -> None:
    tree(search.root, {os.fsdecode(b"sub\xff/caf\xe9.txt"): b"needle\n"})
    for name, args in (("glob", {"pattern": "*.txt"}), ("grep", {"pattern": "needle"})):
        result = await search.call(name, args)
        assert not result.is_error, result.content
        assert "sub\ufffd/caf\ufffd.txt" in str(result.value)
        text = result.content[0].text  # type: ignore[union-attr]
        assert "sub\ufffd/caf\ufffd.txt" in text
        text.encode("utf-8")  # a lone surrogate here would break every later request


async def test_grep_errors(search: Tools) -> None:
    assert await search.error("grep", {"pattern": ""}) == "pattern must be a non-empty string"
    result = await search.call("grep", {"pattern": "foo("})
    assert result.is_error and result.error.code == "SEARCH_INVALID_PATTERN"  # type: ignore[union-attr]
    assert result.content[0].text.startswith("Error: grep pattern rejected by ")  # type: ignore[union-attr]
    os.mkfifo(search.root / "pipe")
    for tool in ("grep", "glob"):
        assert await search.error(tool, {"pattern": "x", "path": "pipe"}) == (
            f'{tool} search failed: "{search.root / "pipe"}" is not a file or directory'
        )
    assert await search.error("grep", {"pattern": "x", "path": "gone"}) == (
        f'grep search failed: "{search.root / "gone"}" does not exist'
    )


async def test_grep_whitespace_pattern_is_allowed(search: Tools) -> None:
    tree(search.root, {"a.txt": "a b\n"})
    assert (await search.ok("grep", {"pattern": " "})).startswith("Found 1 match")


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a chmod 000 directory anyway")
async def test_unreadable_directories_are_skipped(search: Tools) -> None:
    tree(search.root, {"a.txt": "needle\n", "locked/b.txt": "needle\n"})
    (search.root / "locked").chmod(0)
    try:
        assert await search.ok("glob", {"pattern": "*.txt"}) == "a.txt"
        assert (await search.ok("grep", {"pattern": "needle"})).startswith("Found 1 match")
    finally:
        (search.root / "locked").chmod(0o755)


@pytest.mark.skipif(not HAS_RG, reason="ripgrep not installed")
async def test_ripgrep_exit_2_for_skipped_paths_keeps_the_results(
    make_tools: MakeTools, tmp_path: Path
) -> None:
    """What rg does beside a directory it may not read (also when the tests run as root)."""

    def fake_rg(name: str, complaint: str) -> str:
        script = tmp_path / name
        script.write_text(
            f'#!/bin/sh\n"{shutil.which("rg")}" "$@"\necho \'{complaint}\' >&2\nexit 2\n'
        )
        script.chmod(0o755)
        return str(script)

    skipped = fake_rg("rg-skipped", "./locked: Permission denied (os error 13)")
    config = {"rg_path": skipped}
    tools = await make_tools({"glob": config, "grep": config})
    tree(tools.root, {"a.txt": "needle\n"})
    assert await tools.ok("glob", {"pattern": "*.txt"}) == "a.txt"
    assert await tools.ok("glob", {"pattern": "*.none"}) == "No files found"
    assert (await tools.ok("grep", {"pattern": "needle"})).startswith("Found 1 match")
    assert await tools.ok("grep", {"pattern": "nothing"}) == "No matches found"
    broken = fake_rg("rg-broken", "error parsing glob")
    config = {"rg_path": broken}
    tools = await make_tools({"glob": config, "grep": config}, root=tools.root)
    for name in ("glob", "grep"):
        result = await tools.call(name, {"pattern": "needle"})
        assert result.is_error and result.error.code == "SEARCH_FAILED"  # type: ignore[union-attr]


# -- parity -------------------------------------------------------------------------------------


@pytest.mark.skipif(not HAS_RG, reason="ripgrep not installed")
async def test_python_and_ripgrep_agree(make_tools: MakeTools, tmp_path: Path) -> None:
    root = tmp_path / "parity"
    files = {
        "README.md": "todo: write docs\n",
        "src/app.py": "def main():\n    # TODO fix\n    return 1\n",
        "src/util/helpers.py": "TODO = 3\n",
        "src/.cache/x.py": "TODO\n",
        "tests/test_app.py": "def test():\n    assert True  # todo\n",
        "vendor/lib.js": "// TODO\n",
        "docs/a b.txt": "spaced TODO\n",
        "data.bin": b"TODO\0\n",
        "out/gen.py": "TODO\n",
    }
    tree(root, files)
    (root / ".git").mkdir()
    (root / ".gitignore").write_text("out/\nvendor/*.js\n")
    age(root, [*files, "src/util", "src", "tests", "vendor", "docs", "out", "src/.cache"])
    py = await make_tools({"glob": {"ripgrep": False}, "grep": {"ripgrep": False}}, root=root)
    rg = await make_tools({}, root=root)
    for args in (
        {"pattern": "*.py"},
        {"pattern": "*"},
        {"pattern": "src/**"},
        {"pattern": "*.{md,txt}", "path": "docs"},
    ):
        assert await py.ok("glob", args) == await rg.ok("glob", args), args
    for args in (
        {"pattern": "TODO"},
        {"pattern": "(?i)todo"},
        {"pattern": "^def", "include": "*.py"},
        {"pattern": "TODO", "path": "src"},
        {"pattern": "TODO", "include": "*.js"},
    ):
        a = (await py.call("grep", args)).value
        b = (await rg.call("grep", args)).value
        assert sorted(map(str, a["matches"])) == sorted(map(str, b["matches"])), args  # type: ignore[index]
