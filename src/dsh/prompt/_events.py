"""The events of the system prompt service."""

from __future__ import annotations

from ..kernel import EmitSpec, EventSpec, Mode, WaterfallSpec
from ._values import AssemblePayload, PromptAssembly

__all__ = ["SYSTEM_PROMPT_ASSEMBLE", "SYSTEM_PROMPT_CHANGE"]

SYSTEM_PROMPT_ASSEMBLE: WaterfallSpec[AssemblePayload, PromptAssembly] = EventSpec.declare(
    "system-prompt/assemble",
    Mode.WATERFALL,
    AssemblePayload,
    PromptAssembly,
    scoped=True,
    doc="Inside every assemble(), scoped by the assembly's scope; the result is authoritative "
    "except that an effective complete section and context suppression are re-imposed.",
)

SYSTEM_PROMPT_CHANGE: EmitSpec[None] = EventSpec.declare(
    "system-prompt/change",
    Mode.EMIT,
    None,
    None,
    scoped=False,
    doc="A section, context, suppressor, tool provider or variable was registered or disposed.",
)
