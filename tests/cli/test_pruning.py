"""The tool-result pruner as `dsh run` shows it: under context pressure an old, large result
loses its middle, the transcript says so once, and no summary is asked of the model."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import yaml

from .support import cli_env, run_dsh, scripted_profile, workspace

WINDOW = 26_000
"""Two 600-line reads (~10k tokens each) pass 80% of it; with the first one pruned, the
request is back under (the default profile's prompt and tools take ~5k)."""


def big_file(folder: Path, name: str) -> None:
    lines = (f"{name} line {i:04d} " + "x" * 50 + "\n" for i in range(600))
    (folder / f"{name}.txt").write_text("".join(lines))


async def read_both(
    tmp_path: Path, script: list[object], rows: Sequence[dict[str, object]] = ()
) -> tuple[int, str, str]:
    """`dsh run` reading a.txt and b.txt (600 lines each) with `script` in a WINDOW-token
    window, the profile's rows followed by `rows`."""
    ws = workspace(tmp_path)
    big_file(ws, "a")
    big_file(ws, "b")
    profile = scripted_profile(tmp_path, script)
    loaded = yaml.safe_load(profile.read_text())
    loaded[0]["config"]["context_window"] = WINDOW
    profile.write_text(yaml.safe_dump([*loaded, *rows]))
    return await run_dsh(
        cli_env(tmp_path),
        *("run", "--profile", str(profile), "--provider", "scripted", "--model", "scripted"),
        *("--cwd", str(ws), "read both files"),
    )


async def test_dsh_run_prunes_an_old_result_without_a_summary(tmp_path: Path) -> None:
    script = [
        {"tool": "read", "args": {"file_path": "a.txt"}},
        {"tool": "read", "args": {"file_path": "b.txt"}},
        "Both read.",  # a fourth request (a summary) would find the script's end: an error
    ]
    code, out, err = await read_both(tmp_path, script)
    assert code == 0, err
    assert out.strip() == "Both read."
    assert "⇣ pruned 1 old tool result\n" in err
    assert err.count("⎿ read 600 lines") == 2  # the pruned copy is not printed again
    assert "compacted" not in err
    session_id = err.split("session ")[-1].split(" ")[0]
    code, shown, err = await run_dsh(cli_env(tmp_path), "sessions", "show", session_id)
    assert code == 0, err
    assert "⇣ pruned 1 old tool result" in shown and shown.count("⎿ read 600 lines") == 2


async def test_a_summary_receipt_shows_in_run_and_sessions_show(tmp_path: Path) -> None:
    script = [
        {"tool": "read", "args": {"file_path": "a.txt"}},
        {"tool": "read", "args": {"file_path": "b.txt"}},
        "The summary: both files were read.",
        "Both read.",
    ]
    # No pruner; a summary at 60 % of the window, keeping 10 % verbatim.
    compaction = {"threshold_ratio": 0.6, "retain_ratio": 0.1}
    rows = [{"id": "pruner", "disabled": True}, {"id": "compaction", "config": compaction}]
    code, out, err = await read_both(tmp_path, script, rows)
    assert code == 0, err
    assert out.strip() == "Both read."
    receipt = next(line for line in err.splitlines() if "compacted into a summary" in line)
    assert re.search(r": \d+ messages \(seq \d+-\d+\), context [\d,]+ → [\d,]+ tokens", receipt)
    assert re.search(r"by scripted:scripted, summary sha256:[0-9a-f]{16}$", receipt)
    before, after = (int(n.replace(",", "")) for n in re.findall(r"([\d,]+) (?:→|tokens)", receipt))
    assert after < before
    session_id = err.split("session ")[-1].split(" ")[0]
    code, shown, err = await run_dsh(cli_env(tmp_path), "sessions", "show", session_id)
    assert code == 0, err
    assert receipt.strip() in shown
