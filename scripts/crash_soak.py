"""The long crash run: many SIGKILL trials of `tests/persistence/crash_child.py`.

Each trial runs a multi-step agent with persistence on in a child process, kills it at a
seeded random point, then loads, repairs and resumes the log here and completes a follow-up
turn, checking that no event the child saw stored is missing.

    .venv/bin/python scripts/crash_soak.py --trials 500 --parallel 4 [--first-seed 1000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.persistence.crash_trial import Trial, run_trial, summary


async def soak(trials: int, parallel: int, first_seed: int, keep: bool) -> int:
    gate = asyncio.Semaphore(parallel)
    failures: list[tuple[int, str]] = []
    done: list[Trial] = []
    tmp = tempfile.mkdtemp(prefix="dsh-crash-soak-")
    try:

        async def one(seed: int) -> None:
            async with gate:
                try:
                    done.append(await run_trial(Path(tmp) / f"trial-{seed}", seed))
                except Exception as exc:
                    failures.append((seed, f"{type(exc).__name__}: {exc}"))
                    print(f"seed {seed}: FAILED {exc}", file=sys.stderr, flush=True)
                if (len(done) + len(failures)) % 50 == 0:
                    print(f"{len(done) + len(failures)} trials", file=sys.stderr, flush=True)

        started = time.perf_counter()
        await asyncio.gather(*(one(first_seed + i) for i in range(trials)))
        elapsed = time.perf_counter() - started
    finally:
        if keep:
            print(f"trial directories kept in {tmp}", file=sys.stderr)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    report = {**summary(done), "failures": failures, "seconds": round(elapsed, 1)}
    print(json.dumps(report, indent=2))
    return 1 if failures else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=300)
    parser.add_argument("--parallel", type=int, default=4)
    parser.add_argument("--first-seed", type=int, default=1000)
    parser.add_argument("--keep", action="store_true", help="keep the trial directories")
    args = parser.parse_args()
    raise SystemExit(asyncio.run(soak(args.trials, args.parallel, args.first_seed, args.keep)))


if __name__ == "__main__":
    main()
