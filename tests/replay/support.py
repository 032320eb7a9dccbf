"""What the replay tests share: a plugin whose tool's description comes from its config, and
a session recorded by a scripted `dsh run` (a real process, the loopback model server)."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from dsh import Context
from dsh.kernel import ConfigRecord
from dsh.testing import OpenAIServer, ServerEntry
from dsh.tools import tool
from tests.cli.support import loopback_env, run_dsh


class NoteConfig(ConfigRecord):
    description: str = "Keep a short note."


class NotePlugin:
    """A `note` tool described by its config (a tool description a profile changes)."""

    name: ClassVar[str] = "replay_note"
    Config = NoteConfig

    @staticmethod
    async def apply(ctx: Context, config: NoteConfig) -> None:
        @tool(name="note", description=config.description)
        def note(text: str) -> str:
            return f"noted: {text}"

        ctx.tools.register(note)


def note_profile(folder: Path, description: str, name: str = "note.yml") -> Path:
    path = folder / name
    path.write_text(
        "- id: replay-note\n  name: tests.replay.support:NotePlugin\n"
        f"  config: {{description: {description!r}}}\n"
    )
    return path


async def record(tmp_path: Path, workspace: Path, script: list[ServerEntry], *args: str) -> Path:
    """Run `dsh run` on the script in `workspace`; the path of the session log it stored."""
    async with OpenAIServer(script) as server:
        env = loopback_env(tmp_path, server.base_url)
        code, _, err = await run_dsh(
            env, "run", "--yes", "--cwd", str(workspace), *args, "read a.txt, then note it"
        )
        assert code == 0, err
        server.assert_complete()
    (log,) = (tmp_path / "sessions").rglob("session.jsonl")
    return log
