"""The model-facing `subagent` and `subagent_fork` tools (foreground and background runs)."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any, Literal, TypeAlias

import msgspec

from ...agent import Agent
from ...events import TextDeltaEvent, ToolCallEvent, typed_as
from ...kernel import CancelSignal
from ...llm import HarnessError, Json, TextBlock, expect
from ...session import SESSION_EVENT, SessionEventPayload
from ...tools import ToolDefinition, ToolRunContext
from ..jobs import JOBS
from ._request import SubagentRequest
from ._runtime import SubagentResult, SubagentRuntime

HEADLINES = {
    "aborted": "subagent run was cancelled",
    "error": "subagent run failed",
    "max-tokens": "subagent run hit its token limit before finishing",
}

PARAMETERS: dict[str, Json] = {
    "type": "object",
    "properties": {
        "description": {"type": "string", "description": "3-5 words, shown to the user."},
        "prompt": {"type": "string"},
    },
    "required": ["description", "prompt"],
}

BACKGROUND_PARAMETER: dict[str, Json] = {"type": "boolean"}

BACKGROUND_SUFFIX = (
    " With run_in_background: a job id at once; read the answer with job_output, stop it with "
    "job_kill."
)

CONTINUABLE_PARAMETER: dict[str, Json] = {"type": "boolean"}

CONTINUABLE_SUFFIX = " With run_in_background: its agent id at once; the answer comes as a notice."

BackgroundMode: TypeAlias = Literal["continuable", "job"] | None
"""How `run_in_background` runs a child: a continuable child, a job, or not at all."""

REFUSAL = "run_in_background is disabled for this tool instance (enableRunInBackground: false)"

DESCRIPTIONS = {
    "spawn": (
        "Delegate a task to a new agent with a fresh context: it does not see this "
        "conversation, so give it every fact it needs. Returns its final answer."
    ),
    "fork": (
        "Delegate a task to a child agent that knows this conversation's completed turns: "
        "state only what is new. Returns its final answer."
    ),
}


class SubagentToolError(HarnessError):
    def __init__(self, message: str) -> None:
        super().__init__(message, "SUBAGENT")


def failure_text(result: SubagentResult) -> str:
    headline = HEADLINES.get(
        result.stop_reason, f"subagent run ended abnormally ({result.stop_reason})"
    )
    text = headline
    if result.diagnostic:
        text += f"\nDiagnostic: {result.diagnostic}"
    if result.text:
        text += f"\nPartial output before the run ended:\n{result.text}"
    return text


class _Delegation(msgspec.Struct, frozen=True):
    """What one subagent tool instance delegates to: its provider, limits and modes."""

    provider: str
    runtime: SubagentRuntime
    max_depth: int
    background: BackgroundMode

    def request(
        self, args: Any, parent: Agent, signal: CancelSignal, *, continuable: bool = False
    ) -> SubagentRequest:
        return SubagentRequest(
            prompt=args["prompt"],
            parent=parent,
            signal=signal,
            label=args["description"],
            max_depth=self.max_depth,
            continuable=continuable,
        )

    async def run_child(
        self, req: SubagentRequest, run: ToolRunContext | None = None
    ) -> tuple[str, SubagentResult]:
        """Start a child, wait for its result, always dispose it; (run id, result). The
        child's steps and answer are the progress of the calling tool's `run`."""
        sub = await self.runtime.start(self.provider, req)
        if run is not None and sub.agent is not None:
            report_steps(sub.agent, run)
        try:
            return sub.id, await sub.result
        finally:
            await sub.dispose()

    async def execute(self, args: Any, run: ToolRunContext) -> Json:
        parent = run.agent
        if not isinstance(parent, Agent):
            raise SubagentToolError(
                "subagent tool requires a calling agent (exec.agent was undefined)"
            )
        if args.get("run_in_background") and self.background == "continuable":
            request = self.request(args, parent, run.signal, continuable=True)
            child = await self.runtime.start(self.provider, request)
            return {"kind": "background", "agentId": child.id}
        if args.get("run_in_background"):
            return self.start_background(args, parent)
        run_id, result = await self.run_child(self.request(args, parent, run.signal), run)
        if result.stop_reason != "completed":
            raise SubagentToolError(failure_text(result))
        return {
            "kind": "foreground",
            "runId": run_id,
            "output": [block.to_json() for block in result.output],
        }

    def start_background(self, args: Any, parent: Agent) -> Json:
        jobs = parent.ctx.get(JOBS) if self.background == "job" else None
        if jobs is None:
            raise SubagentToolError(REFUSAL)
        depth = parent.session.header.delegation_depth + 1
        if depth > self.max_depth:  # refused now, not as a failed job later
            raise SubagentToolError(f"subagent depth {depth} exceeds maxDepth {self.max_depth}")
        body = functools.partial(self.background_body, args, parent)
        job = jobs.start(parent, "subagent", args["description"], body)
        return {"kind": "background", "jobId": job.id}

    async def background_body(self, args: Any, parent: Agent, signal: CancelSignal) -> str:
        _, result = await self.run_child(self.request(args, parent, signal))
        if result.stop_reason != "completed":
            raise SubagentToolError(failure_text(result))
        return result.text


def report_steps(child: Agent, run: ToolRunContext) -> None:
    """While `child` lives, its steps (`step 2: bash`) and its answer's text are the progress
    and output of the tool call `run` that started it."""
    session = child.session

    def on_event(payload: SessionEventPayload) -> None:
        if payload.session is not session:
            return
        if (call := typed_as(payload.event, ToolCallEvent)) is not None:
            run.progress(f"step {call.step}: {call.name}")
        elif (delta := typed_as(payload.event, TextDeltaEvent)) is not None:
            run.output(delta.text)

    child.ctx.on(SESSION_EVENT, on_event)


def render_subagent(args: Json, value: Mapping[str, Json]) -> list[TextBlock]:
    if value["kind"] == "background" and "agentId" in value:
        return [
            TextBlock(
                f"started subagent {value['agentId']} in the background; its answer arrives "
                "as a notice when it is done"
            )
        ]
    if value["kind"] == "background":
        return [TextBlock(f"started background subagent job {value['jobId']}")]
    blocks = expect(value["output"], list)
    texts = [str(b["text"]) for b in blocks if isinstance(b, dict) and b.get("type") == "text"]
    return [TextBlock("".join(texts))]


def subagent_tool(
    name: str,
    provider: str,
    runtime: SubagentRuntime,
    max_depth: int,
    *,
    background: BackgroundMode = None,
    description: str | None = None,
) -> ToolDefinition:
    """The `subagent` / `subagent_fork` tool named `name`, delegating to `provider` (the
    description of `spawn` or `fork`, unless given). With a `background` mode it offers
    `run_in_background`: a continuable child, or a job of the jobs service."""
    parameters = PARAMETERS
    description = description or DESCRIPTIONS[provider]
    if background is not None:
        continuable = background == "continuable"
        option = CONTINUABLE_PARAMETER if continuable else BACKGROUND_PARAMETER
        properties = dict(expect(PARAMETERS["properties"], dict))
        parameters = {**PARAMETERS, "properties": {**properties, "run_in_background": option}}
        description += CONTINUABLE_SUFFIX if continuable else BACKGROUND_SUFFIX
    return ToolDefinition(
        name=name,
        description=description,
        parameters=parameters,
        execute=_Delegation(provider, runtime, max_depth, background).execute,
        output_schema={"type": "object"},
        render=render_subagent,
        is_concurrency_safe=_always,
    )


def _always(args: object) -> bool:
    return True
