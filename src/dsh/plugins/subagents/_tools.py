"""The model-facing `subagent` and `subagent_fork` tools (foreground runs)."""

from __future__ import annotations

from typing import Any

from ...llm import HarnessError, Json, TextBlock
from ...tools import ToolDefinition, ToolRunContext
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
    name: str, provider: str, runtime: SubagentRuntime, max_depth: int
) -> ToolDefinition:
    async def execute(args: Any, run: ToolRunContext) -> Json:
        parent = run.agent
        if parent is None:
            raise SubagentToolError(
                "subagent tool requires a calling agent (exec.agent was undefined)"
            )
        if args.get("run_in_background"):
            raise SubagentToolError(
                "run_in_background is disabled for this tool instance "
                "(enableRunInBackground: false)"
            )
        request = SubagentRequest(
            prompt=args["prompt"],
            parent=parent,  # type: ignore[arg-type]
            signal=run.signal,
            label=args["description"],
            max_depth=max_depth,
        )
        sub = await runtime.start(provider, request)
        try:
            result = await sub.result
        finally:
            await sub.dispose()
        if result.stop_reason != "completed":
            raise SubagentToolError(failure_text(result))
        return {
            "kind": "foreground",
            "runId": sub.id,
            "output": [block.to_json() for block in result.output],
        }

    def render(args: Any, value: Any) -> list[TextBlock]:
        texts = [b["text"] for b in value["output"] if b.get("type") == "text"]
        return [TextBlock("".join(texts))]

    return ToolDefinition(
        name=name,
        description=DESCRIPTIONS[provider],
        parameters=PARAMETERS,
        execute=execute,
        output_schema={"type": "object"},
        render=render,
        is_concurrency_safe=lambda args: True,
    )
