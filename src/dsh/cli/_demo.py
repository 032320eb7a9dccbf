"""`dsh demo`: the main job on a small sample task, with DeepSeek when a key is set and a
scripted model behind a real loopback HTTP server otherwise."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from ._run import RunOptions, run_task

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..testing import RecordedRequest, Reply

DEMO_MODEL = "deepseek:deepseek-v4-flash"
"""The scripted demo plays DeepSeek's wire format, whatever DSH_MODEL says."""
DEFAULT_TASK = "greeting.py prints the wrong words. Fix it and show that it works."
SAMPLE = {
    "greeting.py": 'message = "hello wrold"\nprint(message)\n',
    "README.md": "A tiny sample project for the dsh demo.\n",
}
DEMO_BANNER = (
    "No DEEPSEEK_API_KEY is set: a scripted demo model is answering (it plays a fixed script "
    "whatever the task says), through the real DeepSeek adapter, HTTP, tools and session log."
)


def scratch_workspace() -> Path:
    """A fresh directory holding the sample project."""
    root = Path(tempfile.mkdtemp(prefix="dsh-demo-"))
    for name, text in SAMPLE.items():
        (root / name).write_text(text)
    return root


def demo_script() -> list[Reply | Callable[[RecordedRequest], Reply]]:
    from ..llm import TokenUsage
    from ..testing import reply, tool_call

    # Usage as DeepSeek reports it: after the first request, the prompt is served from cache.
    return [
        reply(
            "Let me look at the file first.",
            tool_call("read", {"file_path": "greeting.py"}),
            usage=TokenUsage(2112, 38),
        ),
        reply(
            tool_call(
                "edit",
                {"file_path": "greeting.py", "old_string": "wrold", "new_string": "world"},
            ),
            usage=TokenUsage(96, 52, cache_read_tokens=2112),
        ),
        reply(
            tool_call(
                "bash", {"command": "python3 greeting.py", "description": "Run the fixed script"}
            ),
            usage=TokenUsage(88, 41, cache_read_tokens=2240),
        ),
        _outcome,
    ]


def _outcome(request: RecordedRequest) -> Reply:
    """The script's last answer: what happened, never a success that did not (when the edit
    and the command were refused, it says so)."""
    from ..llm import TokenUsage, expect
    from ..testing import reply

    messages = expect(expect(request.body, dict)["messages"], list)
    results = [m for m in messages if isinstance(m, dict) and m.get("role") == "tool"]
    refused = any(str(m.get("content", "")).startswith("Error:") for m in results)
    text = (
        "I could not fix greeting.py: changing it and running it need your approval, and "
        "nobody could give it here. Run again with --yes (`make run … YES=1`), or use `dsh chat` "
        "to approve each step."
        if refused
        else 'Fixed the typo in greeting.py ("wrold" → "world"); it now prints "hello world".'
    )
    return reply(text, usage=TokenUsage(71, 30, cache_read_tokens=2368))


def _permissions(task: str | None, workspace: Path | None, yes: bool) -> tuple[bool, str]:
    """Whether tool calls run unasked, and the sentence that says so. Only the built-in
    script in its own scratch folder runs unattended; a task or folder of the user's
    gets what `dsh run` gives (asks denied) unless `--yes`."""
    if yes:
        return True, "--yes: every tool call runs without asking."
    if task is None and workspace is None:
        return True, "The built-in sample runs its tools without asking, in a scratch folder."
    return False, (
        "Your task or folder: changes to files and commands are denied without asking "
        "(add --yes to allow them — YES=1 with make run — or use `dsh chat` to approve each one)."
    )


async def run_demo(task: str | None, workspace: Path | None, *, yes: bool = False) -> int:
    from ..assembly import workspace_dir

    approve, permission = _permissions(task, workspace, yes)
    cwd = workspace_dir(workspace) if workspace is not None else scratch_workspace()
    banner = f"{permission}\nworkspace: {cwd}"
    options = RunOptions(cwd=cwd, yes=approve, task=task or DEFAULT_TASK, banner=banner)
    if os.environ.get("DEEPSEEK_API_KEY"):
        return await run_task(options)
    from ..testing import OpenAIServer

    saved = {k: os.environ.get(k) for k in ("DEEPSEEK_BASE_URL", "DEEPSEEK_API_KEY")}
    async with OpenAIServer(demo_script()) as server:
        os.environ["DEEPSEEK_BASE_URL"] = server.base_url
        os.environ["DEEPSEEK_API_KEY"] = "demo-key-not-a-secret"
        try:
            banner = f"{DEMO_BANNER}\n{banner}"
            return await run_task(msgspec.structs.replace(options, banner=banner, model=DEMO_MODEL))
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value
