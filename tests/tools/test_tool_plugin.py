"""`ToolPlugin`: the one way to declare a plugin that contributes tools."""

from collections.abc import Sequence

import pytest
from pydantic import BaseModel, ConfigDict

from dsh import Context
from dsh.kernel import PluginError
from dsh.prompt import SystemPromptPlugin
from dsh.tools import ToolDefinition, ToolPlugin, ToolsPlugin, tool


@pytest.fixture
def ctx_plugins() -> Sequence[object]:
    return [ToolsPlugin]


@tool
def shout(text: str) -> str:
    """Say it loudly."""
    return text.upper()


@tool
def whisper(text: str) -> str:
    """Say it softly."""
    return text.lower()


class VoiceConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    suffix: str = "!"


def voice_tools(ctx: Context, config: VoiceConfig) -> ToolDefinition:
    @tool(name="exclaim")
    def exclaim(text: str) -> str:
        """Add the configured suffix."""
        return text + config.suffix

    return exclaim


async def test_tools_and_their_guidance_come_and_go_with_the_plugin(ctx: Context) -> None:
    plugin = ToolPlugin("voices", [shout, whisper], guidance=(110, "Use shout sparingly."))
    fiber = await ctx.plugin(plugin)
    assert [s.name for s in ctx.tools.schemas()] == ["shout", "whisper"]
    await ctx.plugin(SystemPromptPlugin, {})  # the section waited for the prompt service
    await ctx.settled()
    assembly = await ctx.system_prompt.assemble()
    assert [(s.name, s.text) for s in assembly.sections] == [("tool:shout", "Use shout sparingly.")]
    await fiber.dispose()
    assert ctx.tools.schemas() == ()
    assert (await ctx.system_prompt.assemble()).sections == ()


async def test_tools_built_from_the_config_and_a_named_section(ctx: Context) -> None:
    plugin = ToolPlugin(
        "exclaiming", voice_tools, config=VoiceConfig, guidance=(1, "x"), section="tool:voice"
    )
    await ctx.plugin(SystemPromptPlugin, {})
    await ctx.plugin(plugin, {"suffix": "?!"})
    exclaim = ctx.tools.get("exclaim")
    assert exclaim is not None
    assert [s.name for s in (await ctx.system_prompt.assemble()).sections] == ["tool:voice"]
    with pytest.raises(PluginError, match=r"config\.loud"):
        await ctx.plugin(plugin, {"loud": True}, id="again")
