"""Rewind: checkpoints of the workspace at every prompt (a shadow git store per workspace) and
rewinds of the code, the conversation or both to any prompt, each a durable event."""

from ._git import Change, GitError, ShadowStore
from ._plugin import RewindConfig, RewindPlugin
from ._service import (
    REWIND,
    Mode,
    PromptInfo,
    RewindError,
    RewindReport,
    Rewinds,
    TurnDiff,
    parse_mode,
)
from ._text import files_text, prompt_lines, report_lines, unrecorded_text

__all__ = [
    "REWIND",
    "Change",
    "GitError",
    "Mode",
    "PromptInfo",
    "RewindConfig",
    "RewindError",
    "RewindPlugin",
    "RewindReport",
    "Rewinds",
    "ShadowStore",
    "TurnDiff",
    "files_text",
    "parse_mode",
    "prompt_lines",
    "report_lines",
    "unrecorded_text",
]
