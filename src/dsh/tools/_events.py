"""The events `dsh.tools` declares."""

from __future__ import annotations

from ..kernel import EmitSpec, EventSpec, Mode, WaterfallSpec
from ._types import PostDecision, PostExecute, PreDecision, ToolExecution, ToolOutcome, ToolResult

__all__ = [
    "TOOLS_CHANGE",
    "TOOLS_EXECUTE",
    "TOOLS_POST_EXECUTE",
    "TOOLS_PRE_EXECUTE",
    "TOOLS_RESULT",
]

TOOLS_PRE_EXECUTE: WaterfallSpec[ToolExecution, PreDecision] = EventSpec.declare(
    "tools/pre-execute",
    Mode.WATERFALL,
    ToolExecution,
    PreDecision,
    doc="Per call, before guards and dispatch; scoped by the call's agent. Return "
    "Allow() (the default), Deny(reason) or Ask(reason); Allow and Ask may carry replacement "
    "arguments.",
)

TOOLS_EXECUTE: WaterfallSpec[ToolExecution, ToolResult] = EventSpec.declare(
    "tools/execute",
    Mode.WATERFALL,
    ToolExecution,
    ToolResult,
    doc="Around dispatch (timeouts, retries, metrics); scoped by the call's agent. "
    "`await next(msgspec.structs.replace(exec, signal=s))` may swap only the signal; the caller's "
    "signal is fused back in before the body.",
)

TOOLS_POST_EXECUTE: WaterfallSpec[PostExecute, PostDecision] = EventSpec.declare(
    "tools/post-execute",
    Mode.WATERFALL,
    PostExecute,
    PostDecision,
    doc="After dispatch, also for denials and tool errors (not for pre-execute failures or "
    "calls aborted before policy); scoped by the call's agent. Return Accept(content=None, "
    "additional_contexts=()) (the default) or Block(feedback).",
)

TOOLS_RESULT: EmitSpec[ToolOutcome] = EventSpec.declare(
    "tools/result",
    Mode.EMIT,
    ToolOutcome,
    doc="The final, frozen outcome of a call, before the loop logs `tool/result`; scoped by "
    "the call's agent. Observe only.",
)

TOOLS_CHANGE: EmitSpec[None] = EventSpec.declare(
    "tools/change",
    Mode.EMIT,
    None,
    scoped=False,
    doc="A tool was registered or unregistered, or a scoped restriction changed.",
)
