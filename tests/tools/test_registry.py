from typing import Any

import pytest

from dsh import Context
from dsh.kernel import (
    CancelSignal,
    DuplicateEntryError,
    InactiveOwnerError,
    Next,
    bind_scope_parent,
    create_scope,
)
from dsh.llm import TextBlock
from dsh.prompt import AssembleContext, SystemPromptPlugin
from dsh.tools import (
    TOOLS_CHANGE,
    TOOLS_POST_EXECUTE,
    TOOLS_PRE_EXECUTE,
    Allow,
    Deny,
    PostDecision,
    PostExecute,
    PreDecision,
    ToolDefinition,
    ToolExecution,
    ToolExecutionInput,
    ToolFailure,
    ToolsPlugin,
    ToolSuccess,
)

from .conftest import Agent

OBJECT = {"type": "object", "properties": {}}


def define(name: str, value: Any = None, **kwargs: Any) -> ToolDefinition:
    return ToolDefinition(name, f"The {name} tool.", OBJECT, lambda a, r: value or name, **kwargs)


def call(name: str, agent: object | None = None, args: Any = None) -> ToolExecutionInput:
    return ToolExecutionInput("c", name, {} if args is None else args, CancelSignal(), agent)


def names(ctx: Context, scope: object | None = None) -> list[str]:
    return [s.name for s in ctx.tools.schemas(scope)]


# -- registration ------------------------------------------------------------------------------


async def test_register_get_and_dispose(ctx: Context) -> None:
    changes: list[None] = []
    ctx.on(TOOLS_CHANGE, changes.append)
    tool = define("read")
    disposer = ctx.tools.register(tool)
    assert ctx.tools.get("read") is tool
    assert len(changes) == 1
    disposer()
    assert ctx.tools.get("read") is None
    assert len(changes) == 2
    disposer()
    assert len(changes) == 2


async def test_duplicates_in_one_layer_and_reserved_names_raise(ctx: Context) -> None:
    ctx.tools.register(define("read"))
    with pytest.raises(DuplicateEntryError):
        ctx.tools.register(define("read"))
    with pytest.raises(ValueError, match="reserved"):
        ctx.tools.register(define("run_code"))
    with pytest.raises(TypeError, match="@tool"):
        ctx.tools.register(lambda: None)  # type: ignore[arg-type]


async def test_registrations_are_owned_by_the_calling_plugin(ctx: Context) -> None:
    class Reader:
        name = "reader"

        @staticmethod
        def apply(pctx: Context, config: None) -> None:
            pctx.tools.register(define("read"))

    fiber = await ctx.plugin(Reader)
    assert ctx.tools.get("read") is not None
    await fiber.dispose()
    assert ctx.tools.get("read") is None


async def test_registering_on_a_disposed_owner_raises(ctx: Context) -> None:
    child = ctx.child("gone")
    await child.owner.dispose()
    with pytest.raises(InactiveOwnerError):
        child.tools.register(define("read"))
    assert ctx.tools.get("read") is None


def test_definitions_are_checked_when_made() -> None:
    for bad in ("has space", "bash\n", "", "x" * 65):
        with pytest.raises(ValueError, match="must match"):
            define(bad)
    with pytest.raises(ValueError, match="timeout_ms"):
        define("t", timeout_ms=0)
    with pytest.raises(ValueError, match="timeout_ms"):
        define("t", timeout_ms=float("inf"))
    with pytest.raises(ValueError, match="parameters"):
        ToolDefinition("t", "", {"type": "string"}, lambda a, r: 1)
    with pytest.raises(ValueError, match="minLength"):
        define("t", output_schema={"type": "string", "minLength": 1})
    assert define("t", timeout_ms=1500).timeout_ms == 1500


async def test_schemas_are_sorted_and_expose_only_the_model_facing_fields(ctx: Context) -> None:
    ctx.tools.register(define("write", timeout_ms=10))
    ctx.tools.register(define("bash"))
    schemas = ctx.tools.schemas()
    assert [s.name for s in schemas] == ["bash", "write"]
    assert schemas[0].to_json() == {
        "name": "bash",
        "description": "The bash tool.",
        "parameters": {"type": "object", "properties": {}},
    }


# -- scopes ------------------------------------------------------------------------------------


async def test_scoped_registrations_shadow_globals_and_unwind_with_the_scope(ctx: Context) -> None:
    agent, other = Agent("a"), Agent("b")
    scope = create_scope(ctx, agent)
    global_read, own_read = define("read", "global"), define("read", "scoped")
    ctx.tools.register(global_read)
    scope.ctx.tools.register(own_read)
    scope.ctx.tools.register(define("mine"))
    assert ctx.tools.get("read", agent) is own_read
    assert ctx.tools.get("read", other) is global_read
    assert ctx.tools.get("read") is global_read
    assert names(ctx, agent) == ["mine", "read"] and names(ctx) == ["read"]
    result = await ctx.tools.execute(call("read", agent))
    assert isinstance(result, ToolSuccess) and result.value == "scoped"
    result = await ctx.tools.execute(call("mine", other))
    assert isinstance(result, ToolFailure) and result.error.code == "UNKNOWN_TOOL"
    await scope.dispose()
    assert ctx.tools.get("read", agent) is global_read
    assert names(ctx, agent) == ["read"]


async def test_child_scopes_see_their_parents_layers(ctx: Context) -> None:
    preset, agent = Agent("preset"), Agent("child")
    bind_scope_parent(agent, preset)
    create_scope(ctx, preset).ctx.tools.register(define("team"))
    assert ctx.tools.get("team", agent) is not None
    assert ctx.tools.get("team") is None


async def test_restrict_needs_a_scope_and_known_names(ctx: Context) -> None:
    ctx.tools.register(define("read"))
    scoped = create_scope(ctx, Agent()).ctx
    scoped.tools.register(define("own"))
    with pytest.raises(ValueError, match="scoped context"):
        ctx.tools.restrict(allow=["read"])
    with pytest.raises(ValueError, match="allow= and/or deny="):
        scoped.tools.restrict()
    with pytest.raises(ValueError, match='"nope"'):
        scoped.tools.restrict(deny=["nope"])
    with pytest.raises(ValueError, match='"own"'):
        scoped.tools.restrict(deny=["own"])
    with pytest.raises(TypeError):
        scoped.tools.restrict(allow="read")


async def test_restrict_masks_inherited_globals_only_and_masks_intersect(ctx: Context) -> None:
    changes: list[None] = []
    for name in ("read", "write", "bash"):
        ctx.tools.register(define(name))
    preset, agent = Agent("preset"), Agent("child")
    bind_scope_parent(agent, preset)
    preset_ctx = create_scope(ctx, preset).ctx
    agent_ctx = create_scope(ctx, agent).ctx
    agent_ctx.tools.register(define("report"))
    ctx.on(TOOLS_CHANGE, changes.append)

    lift = preset_ctx.tools.restrict(allow=["read", "write"])
    agent_ctx.tools.restrict(deny=["write"])
    assert len(changes) == 2
    assert names(ctx, preset) == ["read", "write"]
    assert names(ctx, agent) == ["read", "report"]  # own registrations are exempt
    assert names(ctx) == ["bash", "read", "write"]
    assert ctx.tools.get("bash", agent) is None
    result = await ctx.tools.execute(call("bash", agent))
    assert isinstance(result, ToolFailure) and result.error.code == "UNKNOWN_TOOL"
    assert ctx.tools.known_names() == {"read", "write", "bash", "report"}

    lift()
    assert names(ctx, agent) == ["bash", "read", "report"]
    assert len(changes) == 3


async def test_deny_masks_admit_tools_registered_later(ctx: Context) -> None:
    ctx.tools.register(define("read"))
    agent = Agent()
    create_scope(ctx, agent).ctx.tools.restrict(deny=["read"])
    ctx.tools.register(define("late"))
    assert names(ctx, agent) == ["late"]


# -- guards ------------------------------------------------------------------------------------


async def test_guards_deny_monotonically_after_pre_execute(ctx: Context) -> None:
    agent, other = Agent("a"), Agent("b")
    ctx.tools.register(define("bash"))
    posted: list[str] = []

    async def allow_all(exec: ToolExecution, next: Next[ToolExecution, PreDecision]) -> PreDecision:
        return Allow()  # a listener cannot re-allow what a guard denies

    async def post(payload: PostExecute, next: Next[PostExecute, PostDecision]) -> PostDecision:
        posted.append(payload.exec.name)
        return await next()

    ctx.on(TOOLS_PRE_EXECUTE, allow_all)
    ctx.on(TOOLS_POST_EXECUTE, post)
    remove = ctx.tools.guard(lambda e: "no shell today" if e.name == "bash" else None)
    create_scope(ctx, agent).ctx.tools.guard(lambda e: "not for you")

    result = await ctx.tools.execute(call("bash"))
    assert isinstance(result, ToolFailure) and result.content == (
        TextBlock("Error: no shell today"),
    )
    assert posted == ["bash"]  # a guard denial still goes through post-execute
    remove()
    assert isinstance(await ctx.tools.execute(call("bash", other)), ToolSuccess)
    result = await ctx.tools.execute(call("bash", agent))
    assert isinstance(result, ToolFailure) and result.error.message == "not for you"


async def test_guards_do_not_run_for_denied_calls_and_a_raising_guard_skips_post(
    ctx: Context,
) -> None:
    ran: list[str] = []
    posted: list[str] = []
    ctx.tools.register(define("bash"))

    def guard(exec: ToolExecution) -> str | None:
        ran.append(exec.name)
        raise RuntimeError("guard crashed")

    ctx.tools.guard(guard)
    ctx.on(TOOLS_POST_EXECUTE, lambda p, n: posted.append("post") or n())
    result = await ctx.tools.execute(call("bash"))
    assert isinstance(result, ToolFailure) and result.error.message == "guard crashed"
    assert posted == []
    ctx.on(TOOLS_PRE_EXECUTE, lambda e, n: Deny("denied first"))
    result = await ctx.tools.execute(call("bash"))
    assert isinstance(result, ToolFailure) and result.error.message == "denied first"
    assert ran == ["bash"]


# -- execution mode ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("classifier", "expected"),
    [
        (None, "exclusive"),
        (lambda args: True, "parallel"),
        (lambda args: 1, "exclusive"),
        (lambda args: "yes", "exclusive"),
        (lambda args: args["safe"], "parallel"),
        (lambda args: 1 / 0, "exclusive"),
    ],
)
async def test_execution_mode_is_parallel_only_for_exactly_true(
    ctx: Context, classifier: Any, expected: str
) -> None:
    ctx.tools.register(define("t", is_concurrency_safe=classifier))
    assert ctx.tools.execution_mode(call("t", args={"safe": True})) == expected


async def test_execution_mode_of_a_hidden_or_unknown_tool_is_exclusive(ctx: Context) -> None:
    agent = Agent()
    ctx.tools.register(define("read", is_concurrency_safe=lambda a: True))
    create_scope(ctx, agent).ctx.tools.restrict(deny=["read"])
    assert ctx.tools.execution_mode(call("read")) == "parallel"
    assert ctx.tools.execution_mode(call("read", agent)) == "exclusive"
    assert ctx.tools.execution_mode(call("missing")) == "exclusive"


# -- the system prompt ---------------------------------------------------------------------------


@pytest.mark.parametrize("prompt_first", [True, False])
async def test_schemas_reach_the_system_prompt_whatever_the_load_order(prompt_first: bool) -> None:
    root = Context()
    plugins = (
        [SystemPromptPlugin, ToolsPlugin] if prompt_first else [ToolsPlugin, SystemPromptPlugin]
    )
    for plugin in plugins:
        await root.plugin(plugin)
    await root.settled()
    agent = Agent()
    root.tools.register(define("write"))
    root.tools.register(define("read"))
    create_scope(root, agent).ctx.tools.restrict(deny=["write"])
    assembly = await root.system_prompt.assemble(AssembleContext(scope=agent))
    assert [t.name for t in assembly.tools] == ["read"]
    assembly = await root.system_prompt.assemble()
    assert [t.name for t in assembly.tools] == ["read", "write"]
    await root.owner.dispose()


async def test_tool_order_may_name_a_tool_only_another_agent_has() -> None:
    root = Context()
    await root.plugin(ToolsPlugin)
    await root.plugin(SystemPromptPlugin, {"tool_order": ["read", "report", "<unlisted-tools>"]})
    await root.settled()
    worker, other = Agent("worker"), Agent("other")
    root.tools.register(define("read"))
    root.tools.register(define("bash"))
    create_scope(root, worker).ctx.tools.register(define("report"))
    assembly = await root.system_prompt.assemble(AssembleContext(scope=worker))
    assert [t.name for t in assembly.tools] == ["read", "report", "bash"]
    for scope in (other, None):
        assembly = await root.system_prompt.assemble(AssembleContext(scope=scope))
        assert [t.name for t in assembly.tools] == ["read", "bash"]
    await root.owner.dispose()


async def test_tools_work_without_a_system_prompt(ctx: Context) -> None:
    ctx.tools.register(define("read"))
    assert isinstance(await ctx.tools.execute(call("read")), ToolSuccess)


async def test_agent_scoped_listeners_see_only_their_agents_calls(ctx: Context) -> None:
    agent, other = Agent("a"), Agent("b")
    seen: list[object] = []
    ctx.tools.register(define("read"))
    create_scope(ctx, agent).ctx.on(TOOLS_PRE_EXECUTE, lambda e, n: seen.append(e.agent) or n())
    await ctx.tools.execute(call("read", other))
    await ctx.tools.execute(call("read"))
    await ctx.tools.execute(call("read", agent))
    assert seen == [agent]


async def test_the_offer_is_made_again_only_when_tools_or_the_scope_change(ctx: Context) -> None:
    ctx.tools.register(define("read"))
    agent, other = Agent("a"), Agent("b")

    def offer(scope: object) -> Any:
        return ctx.tools.tool_schema_set(AssembleContext(scope=scope))

    first = offer(agent)
    assert offer(agent) is first  # nothing changed: the same offer, nothing rebuilt
    assert offer(other) is first  # another scope that sees the same tools: the same object
    scoped = create_scope(ctx, agent).ctx
    scoped.tools.register(define("mine"))
    assert [s.name for s in offer(agent).schemas] == ["mine", "read"]
    scoped.tools.restrict(deny=["read"])
    assert [s.name for s in offer(agent).schemas] == ["mine"]
    ctx.tools.register(define("write"))
    assert [s.name for s in offer(agent).schemas] == ["mine", "write"]
    assert [s.name for s in offer(None).schemas] == ["read", "write"]
    assert [s.name for s in offer(other).schemas] == ["read", "write"]
