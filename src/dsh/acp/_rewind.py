"""`/rewind` in an editor. ACP has no method to rewind a session, but an agent may advertise
slash commands (`available_commands_update`), which the editor offers in its prompt box and
sends back as the prompt's text: `/rewind` lists the prompts, `/rewind N [code|conversation|
both]` rewinds (default both), `/rewind undo` takes the last rewind back. The answer is a
message of the agent; the model is not called."""

from __future__ import annotations

from collections.abc import Sequence

from acp.schema import (
    AvailableCommand,
    AvailableCommandInput,
    TextContentBlock,
    UnstructuredCommandInput,
)

from ..agent import Agent
from ..plugins.rewind import REWIND, RewindError, parse_mode, prompt_lines, report_lines
from ._prompt import PromptBlock

__all__ = ["rewind_argument", "rewind_command", "rewind_text"]

COMMAND = "/rewind"
USAGE = "/rewind N [code|conversation|both], or /rewind undo"


def rewind_command() -> AvailableCommand:
    """The slash command this agent offers of its own: `rewind`."""
    hint = "N [code|conversation|both] (default both), or undo; nothing lists the prompts"
    return AvailableCommand(
        name="rewind",
        description="Take the files, the conversation or both back to before a prompt",
        input=AvailableCommandInput(root=UnstructuredCommandInput(hint=hint)),
    )


def rewind_argument(blocks: Sequence[PromptBlock]) -> str | None:
    """What follows `/rewind` when the prompt is that command, else None."""
    if len(blocks) != 1 or not isinstance(blocks[0], TextContentBlock):
        return None
    text = blocks[0].text.strip()
    head, _, rest = text.partition(" ")
    return rest.strip() if head == COMMAND else None


async def rewind_text(agent: Agent, argument: str) -> str:
    """Run `/rewind ARGUMENT` on the agent's session; the answer to show."""
    rewinds = agent.ctx.get(REWIND)
    if rewinds is None:
        return "rewind is not available (no rewind plugin in the profile)"
    session = agent.session
    words = argument.split()
    try:
        if not words:
            lines = prompt_lines(await rewinds.prompts(session))
            return "\n".join([*lines, USAGE]) if lines else rewinds.no_checkpoints(session)
        mode = parse_mode(words[1] if len(words) == 2 else "both")
        if words == ["undo"]:
            report = await rewinds.rewind(session, undo=True)
        elif words[0].isdigit() and len(words) <= 2 and mode is not None:
            report = await rewinds.rewind(session, int(words[0]), mode=mode)
        else:
            return f"usage: {USAGE}"
    except RewindError as exc:
        return str(exc)
    return "\n".join([*report_lines(report, session.id), "(/rewind undo takes it back)"])
