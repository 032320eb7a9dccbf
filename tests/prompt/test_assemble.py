import asyncio
import math
from typing import Any

import pytest

from dsh import Context
from dsh.kernel import (
    Aborted,
    CancelSignal,
    DuplicateEntryError,
    Next,
    bind_scope_parent,
    create_scope,
)
from dsh.prompt import (
    SYSTEM_PROMPT_ASSEMBLE,
    SYSTEM_PROMPT_CHANGE,
    AssembleContext,
    AssemblePayload,
    NamedText,
    PromptAssembly,
    PromptAssemblyError,
    ToolSchemaSet,
    render_prompt,
)


class Key:
    """A scope key (compared by identity, like an agent)."""


def names(asm: PromptAssembly) -> list[str]:
    return [s.name for s in asm.sections]


async def test_sections_follow_order_bands_and_ties_keep_registration_order(ctx: Context) -> None:
    sp = ctx.system_prompt
    sp.section("tool:b", 150, "b")
    sp.section("agent:persona", 0, "persona")
    sp.section("tool:a", 150, "a")
    sp.section("harness:identity", -100, "identity")
    sp.section("tool:first", 100, "first")
    sp.section("late", 0.5, "late")
    asm = await sp.assemble()
    assert names(asm) == [
        "harness:identity",
        "agent:persona",
        "late",
        "tool:first",
        "tool:b",
        "tool:a",
    ]
    assert render_prompt(asm).startswith("identity\n\npersona\n\nlate")


async def test_callable_texts_sync_and_async_receive_the_assemble_context(ctx: Context) -> None:
    sp = ctx.system_prompt
    seen: list[AssembleContext] = []

    def sync_text(actx: AssembleContext) -> str:
        seen.append(actx)
        return f"agent={actx.agent}"

    async def async_text(actx: AssembleContext) -> str:
        await asyncio.sleep(0)
        return "async"

    sp.section("a", 1, sync_text)
    sp.section("b", 2, async_text)
    sp.context("c", 1, async_text)
    actx = AssembleContext(agent="A1")
    asm = await sp.assemble(actx)
    assert asm.sections == (NamedText("a", "agent=A1"), NamedText("b", "async"))
    assert asm.contexts == (NamedText("c", "async"),)
    assert seen == [actx]


@pytest.mark.parametrize("order", [math.nan, math.inf, -math.inf, True, "1", None])
async def test_order_must_be_a_finite_number(ctx: Context, order: Any) -> None:
    with pytest.raises(ValueError, match="finite number"):
        ctx.system_prompt.section("s", order, "x")
    with pytest.raises(ValueError, match="finite number"):
        ctx.system_prompt.context("c", order, "x")


async def test_invalid_registrations_are_rejected(ctx: Context) -> None:
    sp = ctx.system_prompt
    with pytest.raises(ValueError, match="non-empty name"):
        sp.section("", 0, "x")
    with pytest.raises(TypeError, match="str or a callable"):
        sp.section("s", 0, 42)  # type: ignore[arg-type]
    for bad in ("Model", "1x", "a-b", "", "a b"):
        with pytest.raises(ValueError, match="invalid prompt variable name"):
            sp.variable(bad, lambda _: "v")
    with pytest.raises(TypeError):
        sp.variable("ok", "not callable")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        sp.tools("not callable")  # type: ignore[arg-type]
    assert await sp.assemble() == PromptAssembly()


async def test_wrongly_typed_provider_results_fail_assembly(ctx: Context) -> None:
    sp = ctx.system_prompt
    d = sp.section("s", 0, lambda _: 42)  # type: ignore[arg-type,return-value]
    with pytest.raises(PromptAssemblyError, match='section "s" is int'):
        await sp.assemble()
    d()
    d = sp.variable("v", lambda _: 1)  # type: ignore[arg-type,return-value]
    with pytest.raises(PromptAssemblyError, match='variable "v" is int'):
        await sp.assemble()
    d()
    sp.tools(lambda _: ["x"])  # type: ignore[arg-type,return-value]
    with pytest.raises(PromptAssemblyError, match="not a ToolSchemaSet"):
        await sp.assemble()


async def test_provider_exceptions_propagate_with_a_note(ctx: Context) -> None:
    def broken(_: AssembleContext) -> str:
        raise RuntimeError("boom")

    ctx.system_prompt.section("fragile", 0, broken)
    with pytest.raises(RuntimeError, match="boom") as info:
        await ctx.system_prompt.assemble()
    assert any('section "fragile"' in note for note in info.value.__notes__)


async def test_an_async_variable_that_raises_is_named_in_a_note(ctx: Context) -> None:
    async def broken(_: AssembleContext) -> str:
        raise RuntimeError("boom")

    ctx.system_prompt.variable("shaky", broken)
    with pytest.raises(RuntimeError, match="boom") as info:
        await ctx.system_prompt.assemble()
    assert info.value.__notes__ == ['while evaluating prompt variable "shaky"']


async def test_duplicate_name_in_one_layer_raises_until_disposed(ctx: Context) -> None:
    sp = ctx.system_prompt
    d = sp.section("s", 0, "one")
    with pytest.raises(DuplicateEntryError):
        sp.section("s", 1, "two")
    sp.context("s", 0, "a context may share a section's name")
    v = sp.variable("v", lambda _: "1")
    with pytest.raises(DuplicateEntryError):
        sp.variable("v", lambda _: "2")
    d()
    v()
    sp.section("s", 1, "two")
    sp.variable("v", lambda _: "2")
    asm = await sp.assemble()
    assert asm.sections == (NamedText("s", "two"),)
    assert dict(asm.variables) == {"v": "2"}


async def test_disposer_of_a_stale_registration_keeps_the_new_one(ctx: Context) -> None:
    sp = ctx.system_prompt
    d1 = sp.section("s", 0, "one")
    d1()
    sp.section("s", 0, "two")
    d1()
    assert names(await sp.assemble()) == ["s"]


async def test_complete_section_becomes_the_whole_prompt(ctx: Context) -> None:
    sp = ctx.system_prompt
    sp.section("harness:identity", -100, "identity")
    sp.section("only", 50, "everything {{v}}", complete=True)
    sp.variable("v", lambda _: "here")
    sp.context("ctx", 0, "context survives")

    async def adds_a_section(payload: AssemblePayload, nxt: Next[Any, PromptAssembly]) -> Any:
        assert names(payload.assembly) == ["only"]  # imposed before the waterfall too
        result = await nxt()
        extra = NamedText("sneaky", "added by a listener")
        return PromptAssembly(
            (*result.sections, extra), result.contexts, result.tools, result.variables
        )

    ctx.on(SYSTEM_PROMPT_ASSEMBLE, adds_a_section)
    asm = await sp.assemble()
    assert asm.sections == (NamedText("only", "everything {{v}}"),)
    assert asm.contexts == (NamedText("ctx", "context survives"),)
    assert render_prompt(asm) == "everything here"


async def test_two_complete_sections_fail_with_both_names(ctx: Context) -> None:
    sp = ctx.system_prompt
    sp.section("first", 0, "a", complete=True)
    d = sp.section("second", 1, "b", complete=True)
    with pytest.raises(PromptAssemblyError, match='"first", "second"') as info:
        await sp.assemble()
    assert info.value.code == "PROMPT_ASSEMBLY"
    d()
    assert names(await sp.assemble()) == ["first"]


async def test_a_scoped_complete_section_may_shadow_the_global_one(ctx: Context) -> None:
    ctx.system_prompt.section("whole", 0, "global", complete=True)
    key = Key()
    scope = create_scope(ctx, key)
    scope.ctx.system_prompt.section("whole", 0, "scoped", complete=True)
    other = scope.ctx.system_prompt.section("other", 0, "x", complete=True)
    with pytest.raises(
        PromptAssemblyError, match='complete section is in effect \\("whole", "other"\\)'
    ):
        await ctx.system_prompt.assemble(AssembleContext(scope=key))
    assert (await ctx.system_prompt.assemble()).sections == (NamedText("whole", "global"),)
    other()
    scoped = await ctx.system_prompt.assemble(AssembleContext(scope=key))
    assert scoped.sections == (NamedText("whole", "scoped"),)


async def test_scoped_entries_shadow_global_ones_and_unwind(ctx: Context) -> None:
    sp = ctx.system_prompt
    sp.section("persona", 0, "global persona")
    sp.section("tail", 200, "tail")
    sp.context("where", 0, "global context")
    sp.variable("model", lambda _: "global-model")
    key, other = Key(), Key()
    scope = create_scope(ctx, key)
    scoped = scope.ctx.system_prompt
    scoped.section("persona", 300, "scoped persona")
    scoped.section("extra", -5, "extra")
    scoped.context("where", 0, "scoped context")
    scoped.variable("model", lambda _: "scoped-model")

    asm = await sp.assemble(AssembleContext(scope=key))
    assert asm.sections == (
        NamedText("extra", "extra"),
        NamedText("tail", "tail"),
        NamedText("persona", "scoped persona"),
    )
    assert asm.contexts == (NamedText("where", "scoped context"),)
    assert asm.variables["model"] == "scoped-model"
    # the view's own scope is the default
    assert await scoped.assemble() == asm

    for scope_key in (None, other):
        plain = await sp.assemble(AssembleContext(scope=scope_key))
        assert names(plain) == ["persona", "tail"]
        assert plain.sections[0].text == "global persona"
        assert plain.variables["model"] == "global-model"

    await scope.dispose()
    after = await sp.assemble(AssembleContext(scope=key))
    assert after == await sp.assemble()
    assert after.sections[0].text == "global persona"


async def test_child_scopes_see_their_parents_layer(ctx: Context) -> None:
    parent, child = Key(), Key()
    bind_scope_parent(child, parent)
    create_scope(ctx, parent).ctx.system_prompt.section("preset", 0, "from the parent scope")
    create_scope(ctx, child).ctx.system_prompt.variable("x", lambda _: "child")
    asm = await ctx.system_prompt.assemble(AssembleContext(scope=child))
    assert names(asm) == ["preset"]
    assert dict(asm.variables) == {"x": "child"}
    parent_view = await ctx.system_prompt.assemble(AssembleContext(scope=parent))
    assert dict(parent_view.variables) == {}


async def test_registrations_are_owned_by_the_calling_plugin(ctx: Context) -> None:
    class Contributor:
        name = "contributor"

        @staticmethod
        def apply(ctx: Context, config: None) -> None:
            ctx.system_prompt.section("contrib", 100, "from a plugin")
            ctx.system_prompt.variable("contrib", lambda _: "v")

    fiber = await ctx.plugin(Contributor)
    asm = await ctx.system_prompt.assemble()
    assert names(asm) == ["contrib"]
    await fiber.dispose()
    assert await ctx.system_prompt.assemble() == PromptAssembly()


async def test_variables_are_evaluated_per_assembly(ctx: Context) -> None:
    calls: list[object] = []

    async def model(actx: AssembleContext) -> str | None:
        calls.append(actx.agent)
        return None if actx.agent is None else f"model-of-{actx.agent}"

    ctx.system_prompt.variable("model", model)
    ctx.system_prompt.variable("cwd", lambda _: "/w")
    asm = await ctx.system_prompt.assemble(AssembleContext(agent="a1"))
    assert dict(asm.variables) == {"cwd": "/w", "model": "model-of-a1"}
    assert (await ctx.system_prompt.assemble()).variables["model"] is None
    assert calls == ["a1", None]


async def test_suppressors_are_scoped_and_counted(ctx: Context) -> None:
    sp = ctx.system_prompt
    sp.context("time", 0, "now")
    key, other = Key(), Key()
    scope = create_scope(ctx, key)
    s1 = scope.ctx.system_prompt.suppress_runtime_context()
    s2 = scope.ctx.system_prompt.suppress_runtime_context()

    async def adds_context(payload: AssemblePayload, nxt: Next[Any, PromptAssembly]) -> Any:
        result = await nxt()
        ctx = (*result.contexts, NamedText("late", "added"))
        return PromptAssembly(result.sections, ctx, result.tools, result.variables)

    ctx.on(SYSTEM_PROMPT_ASSEMBLE, adds_context)
    assert (await sp.assemble(AssembleContext(scope=key))).contexts == ()
    assert [c.name for c in (await sp.assemble(AssembleContext(scope=other))).contexts] == [
        "time",
        "late",
    ]
    s1()
    assert (await sp.assemble(AssembleContext(scope=key))).contexts == ()
    s2()
    assert len((await sp.assemble(AssembleContext(scope=key))).contexts) == 2
    scope.ctx.system_prompt.suppress_runtime_context()
    await scope.dispose()
    assert len((await sp.assemble(AssembleContext(scope=key))).contexts) == 2


async def test_a_global_suppressor_applies_to_every_scope(ctx: Context) -> None:
    ctx.system_prompt.context("time", 0, "now")
    d = ctx.system_prompt.suppress_runtime_context()
    assert (await ctx.system_prompt.assemble(AssembleContext(scope=Key()))).contexts == ()
    d()
    assert (await ctx.system_prompt.assemble()).contexts == (NamedText("time", "now"),)


async def test_assemble_waterfall_can_replace_the_result_per_scope(ctx: Context) -> None:
    sp = ctx.system_prompt
    sp.section("base", 0, "base")
    key = Key()
    scope = create_scope(ctx, key)
    seen: list[AssembleContext] = []

    async def rewrite(payload: AssemblePayload, nxt: Next[Any, PromptAssembly]) -> Any:
        seen.append(payload.context)
        asm = payload.assembly
        replaced = PromptAssembly((NamedText("base", "rewritten"),), asm.contexts, (), {"x": "1"})
        return await nxt(AssemblePayload(replaced, payload.context))

    scope.ctx.on(SYSTEM_PROMPT_ASSEMBLE, rewrite)
    actx = AssembleContext(agent="agent", scope=key)
    asm = await sp.assemble(actx)
    assert asm.sections == (NamedText("base", "rewritten"),)
    assert dict(asm.variables) == {"x": "1"}
    assert seen == [actx]
    assert (await sp.assemble()).sections == (NamedText("base", "base"),)
    assert len(seen) == 1


async def test_assemble_listener_must_return_an_assembly(ctx: Context) -> None:
    async def wrong(payload: AssemblePayload, nxt: Next[Any, PromptAssembly]) -> Any:
        return "text"

    ctx.on(SYSTEM_PROMPT_ASSEMBLE, wrong)
    with pytest.raises(PromptAssemblyError, match="returned str"):
        await ctx.system_prompt.assemble()


async def test_an_aborted_signal_stops_assembly(ctx: Context) -> None:
    evaluated: list[str] = []
    ctx.system_prompt.section("s", 0, lambda _: evaluated.append("s") or "s")
    signal = CancelSignal()
    signal.abort("user")
    with pytest.raises(Aborted):
        await ctx.system_prompt.assemble(AssembleContext(signal=signal))
    assert evaluated == []


async def test_change_is_emitted_on_every_registration_and_disposal(ctx: Context) -> None:
    key = Key()
    scope = create_scope(ctx, key)
    changes: list[None] = []
    # a scoped listener still hears changes made elsewhere: the event is unfiltered
    create_scope(ctx, Key()).ctx.on(SYSTEM_PROMPT_CHANGE, changes.append)
    sp = scope.ctx.system_prompt
    disposers = [
        sp.section("s", 0, "x"),
        sp.context("c", 0, "x"),
        sp.variable("v", lambda _: None),
        sp.tools(lambda _: ToolSchemaSet()),
        sp.suppress_runtime_context(),
        ctx.system_prompt.section("g", 0, "x"),
    ]
    assert len(changes) == 6
    with pytest.raises(DuplicateEntryError):
        sp.section("s", 0, "again")
    assert len(changes) == 6
    disposers[0]()
    disposers[0]()
    assert len(changes) == 7
    await scope.dispose()
    assert len(changes) == 11
    assert changes == [None] * 11


async def test_ties_keep_registration_order_across_layers(ctx: Context) -> None:
    key = Key()
    create_scope(ctx, key).ctx.system_prompt.section("scoped-first", 10, "a")
    ctx.system_prompt.section("global-later", 10, "b")
    asm = await ctx.system_prompt.assemble(AssembleContext(scope=key))
    assert names(asm) == ["scoped-first", "global-later"]
