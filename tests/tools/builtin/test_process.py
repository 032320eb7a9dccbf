"""`run_process`: the child-process runner of bash, ripgrep and command hooks."""

from __future__ import annotations

from pathlib import Path

from dsh.kernel import CancelSignal
from dsh.tools.builtin import run_process


async def run(argv: list[str], tmp_path: Path, stdin: bytes | None) -> tuple[int | None, bytes]:
    done = await run_process(
        argv,
        cwd=str(tmp_path),
        env=None,
        signal=CancelSignal(),
        timeout_s=30,
        max_bytes=1 << 20,
        keep="head",
        stdin=stdin,
    )
    return done.returncode, done.stdout.data


async def test_stdin_is_written_then_closed(tmp_path: Path) -> None:
    assert await run(["cat"], tmp_path, b'{"a": 1}') == (0, b'{"a": 1}')


async def test_without_stdin_the_child_reads_end_of_input(tmp_path: Path) -> None:
    assert await run(["cat"], tmp_path, None) == (0, b"")


async def test_a_child_that_never_reads_its_input_is_not_blocked(tmp_path: Path) -> None:
    code, out = await run(["sh", "-c", "echo done"], tmp_path, b"x" * (4 << 20))
    assert (code, out) == (0, b"done\n")
