"""The unpublished child's scoped world: persona, tool filter, structured output, descriptor."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...kernel import Context
from ...llm import Json
from ...tools import ToolDefinition, ToolExecution, ToolRunContext

if TYPE_CHECKING:
    from ._runtime import SubagentRequest

STRUCTURED_TOOL = "submit_result"
DESCRIPTOR_VERSION = 1


class ChildSetup:
    """`setup(agent_ctx)` for `ctx.agents.create`; remembers the structured result."""

    def __init__(self, request: SubagentRequest, provider: str, run_id: str) -> None:
        self.request = request
        self.provider = provider
        self.run_id = run_id
        self.structured: Json = None
        self.submitted = False

    def __call__(self, ctx: Context) -> None:
        request = self.request
        child = ctx.agent
        assert child is not None
        if request.persona:
            ctx.system_prompt.section("subagent:persona", 10, request.persona)
        if request.tool_filter is not None:
            f = request.tool_filter
            allow = list(f.allow) if f.allow is not None else None
            deny = list(f.deny) if f.deny is not None else None
            ctx.tools.restrict(allow=allow, deny=deny)
        if request.output_schema is not None:
            self._structured_output(ctx, request.output_schema)
        descriptor: dict[str, Json] = {
            "version": DESCRIPTOR_VERSION,
            "mode": "continuable" if request.continuable else "one-shot",
            "provider": self.provider,
        }
        if request.label:
            descriptor["label"] = request.label
        options = child.options
        if options.provider:
            descriptor["agentProvider"] = options.provider
        if options.model:
            descriptor["agentModel"] = options.model
        if request.persona:
            descriptor["persona"] = request.persona
        if request.tool_filter is not None:
            tf = request.tool_filter
            descriptor["toolFilter"] = (
                {"allow": list(tf.allow)} if tf.allow is not None else {"deny": list(tf.deny or ())}
            )
        child.session.append("subagent/descriptor", descriptor)

    def _structured_output(self, ctx: Context, schema: dict[str, Json]) -> None:
        def submit(args: Json, run: ToolRunContext) -> Json:
            self.structured = args
            self.submitted = True
            run.conclude_turn()
            return "result recorded"

        ctx.tools.register(
            ToolDefinition(
                name=STRUCTURED_TOOL,
                description="Submit your final result in the required structure; this ends "
                "your task.",
                parameters=schema,
                execute=submit,
            )
        )

        def once(exec: ToolExecution) -> str | None:
            if exec.name == STRUCTURED_TOOL and self.submitted:
                return "a result was already submitted"
            return None

        ctx.tools.guard(once)
        ctx.system_prompt.section(
            "subagent:structured-output",
            190,
            f"When you have finished, call the {STRUCTURED_TOOL} tool exactly once with your "
            "result; the task ends when you do.",
        )
