"""Rewind checkpoints: the cost per turn on a generated 10k-file repository.

A workspace of 10,000 small files in 100 folders (plus a `.gitignore`d build folder), then
the shadow store's work as a turn sees it: the first checkpoint of the workspace's first
session (every file hashed once), turns that each change 5 files and create 1 before their
end checkpoint (a turn pays two checkpoints: before the prompt and at its end; a tool that
may write pays one more), and the first checkpoint of another process's store of the
workspace after one more file (warm: the workspace's one index is shared). Printed:
milliseconds per checkpoint (median and max) and per turn. Numbers are indicative on a busy
machine. Target: well under a second per turn.
Run: `.venv/bin/python bench/rewind.py [--files 10000] [--turns 20]`.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from dsh.plugins.rewind import ShadowStore


def generate(root: Path, files: int) -> None:
    for index in range(files):
        path = root / f"pkg{index % 100:02d}" / f"module_{index}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"# module {index}\nVALUE = {index}\n" + "x = 1\n" * 20)
    (root / ".gitignore").write_text("build/\n")
    (root / "build").mkdir()
    for index in range(1000):
        (root / "build" / f"out_{index}.o").write_bytes(b"\0" * 64)


def timed(store: ShadowStore) -> float:
    start = time.perf_counter()
    store.snapshot()
    return (time.perf_counter() - start) * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--turns", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp) / "ws"
        generate(ws, args.files)
        root = Path(tmp) / "store"
        store = ShadowStore(root, ws, 5_000_000)
        first = timed(store)
        costs: list[float] = []
        turns: list[float] = []
        for turn in range(args.turns):
            before = timed(store)
            for k in range(5):
                path = ws / f"pkg{k:02d}" / f"module_{k}.py"
                path.write_text(path.read_text() + f"# turn {turn}\n")
            (ws / f"new_{turn}.txt").write_text(f"turn {turn}\n")
            end = timed(store)
            costs += [before, end]
            turns.append(before + end)
        (ws / "late.txt").write_text("one more file\n")
        warm = timed(ShadowStore(root, ws, 5_000_000))  # another process's first checkpoint
    print(f"workspace: {args.files} files (+1000 ignored)")
    print(f"first checkpoint of the workspace: {first:.0f} ms")
    print(f"first checkpoint in another process (one file changed): {warm:.0f} ms")
    print(
        f"checkpoint: median {statistics.median(costs):.0f} ms, max {max(costs):.0f} ms; "
        f"per turn (2 checkpoints): median {statistics.median(turns):.0f} ms"
    )


if __name__ == "__main__":
    main()
