"""Project instructions: AGENTS.md (and CLAUDE.md) files from the workspace up to the
repository root, and the user's own, as one system-prompt section."""

from ._files import InstructionFile, InstructionReader, InstructionsText, candidates, render
from ._plugin import SECTION, VARIABLE, InstructionsConfig, InstructionsPlugin, instructions_for

__all__ = [
    "SECTION",
    "VARIABLE",
    "InstructionReader",
    "InstructionsText",
    "InstructionFile",
    "InstructionsConfig",
    "InstructionsPlugin",
    "candidates",
    "instructions_for",
    "render",
]
