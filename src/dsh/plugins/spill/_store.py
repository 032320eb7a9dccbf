"""`Spills` (`ctx.get(SPILLS)`): spill files of the calling session, in the `SpillArea` the
persistence service chose (or a temporary one without persistence)."""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO, cast

from ...kernel import ServiceKey
from ...persistence import SpillArea
from ...session import SessionHeader
from ...tools import SPILLS as _SPILLS
from ...tools import ToolExecution
from ...workspace import open_private

__all__ = ["SPILLS", "SpillFile", "Spills"]

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


class SpillFile:
    """One spill file being written; `commit()` closes it and stores it durably."""

    __slots__ = ("_area", "_file", "_header", "_path")

    def __init__(self, area: SpillArea, header: SessionHeader, path: Path, file: BinaryIO) -> None:
        self._area = area
        self._header = header
        self._path = path
        self._file = file

    @property
    def path(self) -> str:
        return str(self._path)

    def write(self, data: bytes) -> None:
        self._file.write(data)

    async def commit(self) -> str:
        self._file.close()
        await asyncio.to_thread(self._area.commit, self._header, self._path)
        return str(self._path)


class Spills:
    """The spill store of the tools: new files go to the calling session's folder in the
    area; `readable` accepts any file the area holds (a fork reads its parent's). The area
    is chosen on first use (`choose()`), so the persistence service may load later."""

    __slots__ = ("_area", "_choose")

    def __init__(self, choose: Callable[[], SpillArea]) -> None:
        self._choose = choose
        self._area: SpillArea | None = None

    @property
    def area(self) -> SpillArea:
        if self._area is None:
            self._area = self._choose()
        return self._area

    def discard(self, session_id: str) -> None:
        if self._area is not None:
            self._area.discard(session_id)

    def close(self) -> None:
        if self._area is not None:
            self._area.close()

    def writer(self, exec: ToolExecution, name: str) -> SpillFile:
        session = exec.session
        if session is None:
            raise OSError("a call without a session has nowhere to spill")
        folder = self.area.folder(session.header)
        stem = _UNSAFE.sub("_", name).strip("._") or "output"
        for n in range(1, 1000):
            path = folder / (stem if n == 1 else f"{n}-{stem}")
            try:
                fd = open_private(path)  # 0600, never over an existing file
            except FileExistsError:
                continue
            return SpillFile(self.area, session.header, path, os.fdopen(fd, "wb"))
        raise OSError(f"no free spill file name for {stem!r} in {folder}")

    async def save(self, exec: ToolExecution, name: str, text: str) -> str:
        def write() -> SpillFile:
            spill = self.writer(exec, name)
            spill.write(text.encode("utf-8", "replace"))
            return spill

        return await (await asyncio.to_thread(write)).commit()

    async def readable(self, exec: ToolExecution, path: str) -> str | None:
        def find() -> str | None:
            real = Path(os.path.realpath(path))
            return str(real) if self.area.holds(real) and self.area.restore(real) else None

        return await asyncio.to_thread(find)


SPILLS = cast("ServiceKey[Spills]", _SPILLS)
"""`dsh.tools.SPILLS`, typed with this implementation."""
