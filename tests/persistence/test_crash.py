"""The crash test: a real child process running a multi-step agent with persistence on is
SIGKILLed at seeded random points; every time, the log loads, repairs, resumes and completes
a follow-up turn, and no event the child saw stored is missing."""

from __future__ import annotations

import asyncio
from pathlib import Path

from .crash_trial import Trial, run_trial, summary

TRIALS = 32
PARALLEL = 4


async def test_sigkill_at_random_points_loses_nothing_stored(tmp_path: Path) -> None:
    gate = asyncio.Semaphore(PARALLEL)

    async def trial(seed: int) -> Trial:
        async with gate:
            return await run_trial(tmp_path / f"trial-{seed}", seed)

    trials = await asyncio.gather(*(trial(seed) for seed in range(TRIALS)))
    facts = summary(list(trials))
    # The kills land in different places: open turns get closed, some with tool results.
    assert facts["repaired"] >= TRIALS // 3, facts
    assert facts["closers"].get("turn/end", 0) == facts["repaired"]
    assert facts["torn"] > 0 and facts["sqlite"] > 0, facts
