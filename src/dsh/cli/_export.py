"""`dsh sessions export ID --format atif [--out FILE]`: a stored session in another format."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Literal

from ..persistence import CorruptLogError
from ..plugins.usage import PRICES
from ._runtime import CliError, corrupt_log
from ._sessions import _booted, find_session

__all__ = ["ExportFormat", "export_session_file"]

ExportFormat = Literal["atif"]


async def export_session_file(
    profile: list[Path] | None, given: str, form: ExportFormat, out: Path | None
) -> int:
    """Write session `given` (its subagents' sessions embedded) as ATIF JSON to `out`, or to
    stdout."""
    from ..atif import export_session

    ctx, persistence = await _booted(profile)
    try:
        session_id = await find_session(persistence, given)
        trajectory = await export_session(persistence, session_id, prices=ctx.get(PRICES))
    except CorruptLogError as exc:
        raise CliError(corrupt_log(exc, given)) from None
    except ValueError as exc:  # nothing to export
        raise CliError(f"session {given}: {exc}") from None
    finally:
        await ctx.owner.dispose()
    text = json.dumps(trajectory, ensure_ascii=False, indent=2) + "\n"
    if out is None:
        sys.stdout.write(text)
    else:
        await asyncio.to_thread(out.write_text, text, encoding="utf-8")
        steps = trajectory.get("steps")
        count = len(steps) if isinstance(steps, list) else 0
        print(f"wrote {out} ({count} steps, {form})", file=sys.stderr)
    return 0
