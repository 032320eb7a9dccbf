from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dsh import Context
from dsh.kernel import PluginError, create_scope
from dsh.llm import ToolSchema
from dsh.prompt import (
    UNLISTED_TOOLS,
    AssembleContext,
    PromptAssemblyError,
    SystemPrompt,
    SystemPromptPlugin,
    ToolSchemaSet,
)
from dsh.session import freeze_json


def schema(name: str) -> ToolSchema:
    return ToolSchema(name, f"the {name} tool", {"type": "object", "properties": {}})


def offer(*names: str, known: frozenset[str] | None = None) -> ToolSchemaSet:
    return ToolSchemaSet(tuple(schema(n) for n in names), known)


async def boot(tool_order: list[str] | None = None) -> Context:
    ctx = Context()
    await ctx.plugin(SystemPromptPlugin, {"tool_order": tool_order})
    return ctx


async def tool_names(ctx: Context, actx: AssembleContext | None = None) -> list[str]:
    return [t.name for t in (await ctx.system_prompt.assemble(actx)).tools]


async def test_default_order_is_lexicographic_by_code_unit(ctx: Context) -> None:
    # UTF-16 puts an astral character (surrogates D800..) before U+FFFF; code points do not.
    names = ["read", "Bash", "bash", "\uffff", "\U0001f600", "a_b", "ab"]
    ctx.system_prompt.tools(lambda _: offer(*names))
    assert await tool_names(ctx) == ["Bash", "a_b", "ab", "bash", "read", "\U0001f600", "\uffff"]


async def test_configured_order_places_head_rest_and_tail() -> None:
    ctx = await boot(["read", "write", UNLISTED_TOOLS, "bash", "hidden"])
    ctx.system_prompt.tools(lambda _: offer("z", "bash", "a", "read", known=frozenset({"hidden"})))
    ctx.system_prompt.tools(lambda _: offer("write", "m"))
    assert await tool_names(ctx) == ["read", "write", "a", "m", "z", "bash"]


async def test_unknown_names_fail_at_assembly() -> None:
    ctx = await boot(["read", UNLISTED_TOOLS, "raed", "bsah"])
    ctx.system_prompt.tools(lambda _: offer("read", "bash"))
    with pytest.raises(PromptAssemblyError, match="unknown tools: 'raed', 'bsah'"):
        await ctx.system_prompt.assemble()


async def test_known_but_hidden_names_are_not_unknown() -> None:
    ctx = await boot(["secret", UNLISTED_TOOLS])
    ctx.system_prompt.tools(lambda _: offer("open", known=frozenset({"open", "secret"})))
    assert await tool_names(ctx) == ["open"]


@pytest.mark.parametrize(
    ("order", "message"),
    [
        (["a", "b"], "exactly once"),
        ([UNLISTED_TOOLS, "a", UNLISTED_TOOLS], "exactly once"),
        (["a", UNLISTED_TOOLS, "a"], "twice"),
        (["", UNLISTED_TOOLS], "empty name"),
    ],
)
async def test_invalid_tool_order_config_is_rejected(order: list[str], message: str) -> None:
    with pytest.raises(PluginError, match=f"config: tool_order .*{message}") as info:
        await boot(order)
    assert info.value.path == "config"  # (a check between values: reported at the record)
    with pytest.raises(ValueError, match=message):
        SystemPrompt(Context(), tool_order=order)


async def test_unknown_config_keys_are_rejected() -> None:
    with pytest.raises(PluginError, match=r"config\.toolOrder"):
        await Context().plugin(SystemPromptPlugin, {"toolOrder": [UNLISTED_TOOLS]})


async def test_the_same_tool_offered_twice_fails(ctx: Context) -> None:
    ctx.system_prompt.tools(lambda _: offer("bash"))
    ctx.system_prompt.tools(lambda _: offer("bash"))
    with pytest.raises(PromptAssemblyError, match="'bash' is offered twice"):
        await ctx.system_prompt.assemble()


async def test_providers_see_the_context_and_scoped_ones_apply_to_their_scope(
    ctx: Context,
) -> None:
    class Key:
        pass

    key = Key()
    seen: list[object] = []

    def global_tools(actx: AssembleContext) -> ToolSchemaSet:
        seen.append(actx.scope)
        return offer("everyone")

    async def scoped_tools(actx: AssembleContext) -> ToolSchemaSet:
        return offer("mine")

    ctx.system_prompt.tools(global_tools)
    create_scope(ctx, key).ctx.system_prompt.tools(scoped_tools)
    assert await tool_names(ctx, AssembleContext(scope=key)) == ["everyone", "mine"]
    assert await tool_names(ctx) == ["everyone"]
    assert seen == [key, None]


async def test_tool_parameters_are_detached_from_the_provider(ctx: Context) -> None:
    params: dict[str, Any] = {"type": "object", "properties": {"p": {"enum": ["a"]}}}
    original = ToolSchema("t", "d", params)
    ctx.system_prompt.tools(lambda _: ToolSchemaSet((original,)))
    tool = (await ctx.system_prompt.assemble()).tools[0]
    assert tool == original
    tool.parameters["properties"]["p"]["enum"].append("b")
    assert params["properties"]["p"]["enum"] == ["a"]


async def test_a_listener_changing_one_assembly_leaves_the_next_alone(ctx: Context) -> None:
    params: dict[str, Any] = {"type": "object", "properties": {"p": {"enum": ["a"]}}}
    offer = ToolSchemaSet((ToolSchema("t", "d", params),))
    ctx.system_prompt.tools(lambda _: offer)  # the same offer every time
    first = (await ctx.system_prompt.assemble()).tools[0]
    first.parameters["properties"]["p"]["enum"].append("b")
    second = (await ctx.system_prompt.assemble()).tools[0]
    assert second.parameters["properties"]["p"]["enum"] == ["a"]


async def test_unchanged_frozen_offers_give_the_same_tools(ctx: Context) -> None:
    frozen = freeze_json({"type": "object", "properties": {"p": {"type": "string"}}})
    offer = ToolSchemaSet((ToolSchema("f", "d", frozen),))
    ctx.system_prompt.tools(lambda _: offer)
    first = (await ctx.system_prompt.assemble()).tools
    assert (await ctx.system_prompt.assemble()).tools is first  # not merged and sorted again


async def test_frozen_tool_parameters_are_shared_not_copied(ctx: Context) -> None:
    frozen = freeze_json({"type": "object", "properties": {"p": {"type": "string"}}})
    inner = freeze_json({"type": "string"})
    mixed: dict[str, Any] = {"type": "object", "properties": {"p": inner}}
    ctx.system_prompt.tools(
        lambda _: ToolSchemaSet((ToolSchema("f", "d", frozen), ToolSchema("m", "d", mixed)))
    )
    f, m = (await ctx.system_prompt.assemble()).tools
    assert f.parameters is frozen
    assert m.parameters == mixed and m.parameters is not mixed
    assert m.parameters["properties"]["p"] is inner  # type: ignore[index]


@given(
    tools=st.sets(st.from_regex(r"[a-z]{1,4}", fullmatch=True), max_size=8),
    data=st.data(),
)
async def test_configured_order_is_a_permutation_honouring_the_list(
    tools: set[str], data: st.DataObject
) -> None:
    listed = data.draw(
        st.lists(st.sampled_from(sorted(tools)), unique=True) if tools else st.just([])
    )
    cut = data.draw(st.integers(0, len(listed)))
    order = [*listed[:cut], UNLISTED_TOOLS, *listed[cut:]]
    ctx = await boot(order)
    ctx.system_prompt.tools(lambda _: offer(*tools))
    result = await tool_names(ctx)
    assert sorted(result) == sorted(tools)
    rest = sorted(tools - set(listed))
    assert result == [*listed[:cut], *rest, *listed[cut:]]
