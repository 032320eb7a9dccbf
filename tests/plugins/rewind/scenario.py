"""The scripted session the rewind tests share: four prompts whose turns edit a file (the
`edit` tool), create one and delete one (`bash`), and change a binary file (`bash`)."""

from __future__ import annotations

import hashlib
from pathlib import Path

from dsh.testing import Entry, ToolCall, reply, tool_call

PROMPTS = ("edit a.txt", "create b.txt", "delete gone.txt", "change logo.bin")

TMP_REFUSED = "the workspace /tmp is not checkpointed (home, root and /tmp never are)"
"""Why a session in /tmp has no checkpoints."""

FILES = {
    "a.txt": b"alpha\n",
    "gone.txt": b"to be deleted\n",
    "logo.bin": bytes(range(256)),
    "sub/keep.txt": b"kept\n",
    ".gitignore": b"*.log\n",
    "noise.log": b"ignored\n",
}


def workspace(base: Path) -> Path:
    """A fresh workspace holding `FILES`."""
    ws = base / "ws"
    for name, data in FILES.items():
        (ws / name).parent.mkdir(parents=True, exist_ok=True)
        (ws / name).write_bytes(data)
    return ws


def script() -> list[Entry]:
    """The model's side of the four turns: one tool call each (the edit after a read), then
    "done"."""
    calls = [
        tool_call("edit", {"file_path": "a.txt", "old_string": "alpha", "new_string": "beta"}),
        bash("printf 'bee\\n' > b.txt"),
        bash("rm gone.txt"),
        bash("printf '\\001\\377\\000' > logo.bin"),
    ]
    entries: list[Entry] = [reply(tool_call("read", {"file_path": "a.txt"}))]
    for call in calls:
        entries += [reply(call), reply("done")]
    return entries


def bash(command: str) -> ToolCall:
    return tool_call("bash", {"command": command, "description": "change the workspace"})


def tree_hash(ws: Path, *, everything: bool = False) -> str:
    """A hash of every file of the workspace (paths, executable bits, bytes); its `.git`
    only with `everything`."""
    digest = hashlib.sha256()
    files = (p for p in ws.rglob("*") if p.is_file())
    for path in sorted(p for p in files if everything or ".git" not in p.parts):
        digest.update(str(path.relative_to(ws)).encode() + b"\0")
        digest.update(b"x" if path.stat().st_mode & 0o100 else b"-")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()
