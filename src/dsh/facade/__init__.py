"""`dsh.Agent`: the short way to an agent — a model, tools, instructions, `run` — over the
same kernel, profile and loop as everything else (no loop logic of its own)."""

from ._agent import Agent
from ._blueprint import FACADE_ROWS
from ._output import FINAL_RESULT, OutputValidationError, RunError
from ._run import StreamedRun
from ._settings import ModelSettings
from ._stores import JsonlStore, MemoryStore, SqliteStore, Store

__all__ = [
    "FACADE_ROWS",
    "FINAL_RESULT",
    "Agent",
    "JsonlStore",
    "MemoryStore",
    "ModelSettings",
    "OutputValidationError",
    "RunError",
    "SqliteStore",
    "Store",
    "StreamedRun",
]
