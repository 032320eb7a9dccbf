"""The model-facing `subagent` and `subagent_fork` tools (foreground and background runs)."""

from __future__ import annotations

from typing import Any

from ...agent import Agent
from ...kernel import CancelSignal
from ...llm import HarnessError, Json, TextBlock
from ...tools import ToolDefinition, ToolRunContext
from ..jobs import JOBS
from ._runtime import SubagentRequest, SubagentResult, SubagentRuntime

HEADLINES = {
    "aborted": "subagent run was cancelled",
    "error": "subagent run failed",
    "max-tokens": "subagent run hit its token limit before finishing",
}

PARAMETERS: dict[str, Json] = {
    "type": "object",
    "properties": {
        "description": {
            "type": "string",
            "description": "A 3-5 word label for the task, shown to the user.",
        },
        "prompt": {"type": "string", "description": "The task for the subagent."},
    },
    "required": ["description", "prompt"],
}

BACKGROUND_PARAMETER: dict[str, Json] = {
    "type": "boolean",
    "description": (
        "Run the subagent as a background job and return its job id at once (default false)."
    ),
}

BACKGROUND_SUFFIX = (
    " By default this waits for the subagent's answer. Set run_in_background: true to get a "
    "job id at once and keep working; read the answer with job_output, or stop it with "
    "job_kill."
)

REFUSAL = "run_in_background is disabled for this tool instance (enableRunInBackground: false)"

DESCRIPTIONS = {
    "spawn": (
        "Delegate a self-contained task to a separate agent with its own fresh context. It does "
        "not see this conversation: write a complete, standalone prompt with every fact it "
        "needs. You get its final answer, not its intermediate steps."
    ),
    "fork": (
        "Delegate a task to a child agent that already knows this conversation's completed "
        "turns (not the current one). State only what is new for the task. You get its final "
        "answer, not its intermediate steps."
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


def subagent_tool(
    name: str,
    provider: str,
    runtime: SubagentRuntime,
    max_depth: int,
    background: bool = False,
) -> ToolDefinition:
    def request(args: Any, parent: Agent, signal: CancelSignal) -> SubagentRequest:
        return SubagentRequest(
            prompt=args["prompt"],
            parent=parent,
            signal=signal,
            label=args["description"],
            max_depth=max_depth,
        )

    async def run_child(req: SubagentRequest) -> tuple[str, SubagentResult]:
        """Start a child, wait for its result, always dispose it; (run id, result)."""
        sub = await runtime.start(provider, req)
        try:
            return sub.id, await sub.result
        finally:
            await sub.dispose()

    def start_background(args: Any, parent: Agent) -> Json:
        jobs = parent.ctx.get(JOBS) if background else None
        if jobs is None:
            raise SubagentToolError(REFUSAL)
        depth = parent.session.header.delegation_depth + 1
        if depth > max_depth:  # refused now, not as a failed job later
            raise SubagentToolError(f"subagent depth {depth} exceeds maxDepth {max_depth}")

        async def body(signal: CancelSignal) -> str:
            _, result = await run_child(request(args, parent, signal))
            if result.stop_reason != "completed":
                raise SubagentToolError(failure_text(result))
            return result.text

        job = jobs.start(parent, "subagent", args["description"], body)
        return {"kind": "background", "jobId": job.id}

    async def execute(args: Any, run: ToolRunContext) -> Json:
        parent = run.agent
        if parent is None:
            raise SubagentToolError(
                "subagent tool requires a calling agent (exec.agent was undefined)"
            )
        if args.get("run_in_background"):
            return start_background(args, parent)  # type: ignore[arg-type]
        run_id, result = await run_child(request(args, parent, run.signal))  # type: ignore[arg-type]
        if result.stop_reason != "completed":
            raise SubagentToolError(failure_text(result))
        return {
            "kind": "foreground",
            "runId": run_id,
            "output": [block.to_json() for block in result.output],
        }

    def render(args: Any, value: Any) -> list[TextBlock]:
        if value["kind"] == "background":
            return [TextBlock(f"started background subagent job {value['jobId']}")]
        texts = [b["text"] for b in value["output"] if b.get("type") == "text"]
        return [TextBlock("".join(texts))]

    parameters = PARAMETERS
    description = DESCRIPTIONS[provider]
    if background:
        properties = dict(PARAMETERS["properties"])
        parameters = {
            **PARAMETERS,
            "properties": {**properties, "run_in_background": BACKGROUND_PARAMETER},
        }
        description += BACKGROUND_SUFFIX
    return ToolDefinition(
        name=name,
        description=description,
        parameters=parameters,
        execute=execute,
        output_schema={"type": "object"},
        render=render,
        is_concurrency_safe=lambda args: True,
    )
