"""The unpublished child's scoped world: persona, tool filter, structured output, descriptor."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..._context import Context
from ...events import SubagentDescriptorEvent, append
from ...kernel import Context as KernelContext
from ...llm import Json
from ...tools import ToolDefinition, ToolExecution, ToolRunContext

if TYPE_CHECKING:
    from ._request import SubagentRequest

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

    def __call__(self, agent_ctx: KernelContext) -> None:
        ctx = Context.of(agent_ctx)
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
        options = child.options
        tf = request.tool_filter
        descriptor = SubagentDescriptorEvent(
            version=DESCRIPTOR_VERSION,
            mode="continuable" if request.continuable else "one-shot",
            provider=self.provider,
            label=request.label or None,
            agent_provider=options.provider or None,
            agent_model=options.model or None,
            persona=request.persona or None,
            tool_filter=None if tf is None else _filter_json(tf.allow, tf.deny),
        )
        append(child.session, descriptor)

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


def _filter_json(allow: Sequence[str] | None, deny: Sequence[str] | None) -> Json:
    """A tool filter as the descriptor logs it: `{allow}` or `{deny}`."""
    return {"allow": list(allow)} if allow is not None else {"deny": list(deny or ())}
