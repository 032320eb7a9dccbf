"""The sandbox against a hostile command, under the real bubblewrap, whoever runs the tests
(CI runs them as root and again as an unprivileged user): no privilege, no Unix socket out,
no change to the workspace's control files, no secret read, and limits a runaway command
cannot pass."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from dsh.plugins.approval import APPROVAL, ApprovalPlugin, ApprovalRequest, Decision
from dsh.plugins.sandbox import SandboxPlugin, probe
from dsh.workspace import Trust
from tests.tools.builtin.conftest import MakeTools, Tools
from tests.tools.builtin.test_bash import bash

pytestmark = pytest.mark.skipif(
    asyncio.run(probe("bwrap", network=False)) is not None,
    reason="bubblewrap cannot run here (.ci/run installs it)",
)

ALLOW_ALL = {"policy": [{"tool": "*", "action": "allow"}]}


@pytest.fixture
def outside() -> Iterator[Path]:
    """A folder of the host outside the workspace and outside /tmp (the sandbox's /tmp is
    private), writable by whoever runs the tests."""
    path = Path("/var/tmp") / f"dsh-escape-{os.getpid()}"
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir()
    yield path
    shutil.rmtree(path, ignore_errors=True)


def approving(tools: Tools) -> list[ApprovalRequest]:
    """The requests the approval service asks from now on, each approved once."""
    asked: list[ApprovalRequest] = []

    async def answer(request: ApprovalRequest) -> Decision:
        asked.append(request)
        return Decision.once()

    tools.ctx.require(APPROVAL).set_answerer(answer)
    return asked


async def sandboxed(make_tools: MakeTools, root: Path | None = None, **config: Any) -> Tools:
    sandbox = {"mode": "workspace-write", **config}
    plugins = [(ApprovalPlugin, ALLOW_ALL), (SandboxPlugin, sandbox)]
    tools: Tools = await make_tools(plugins=plugins, root=root)
    return tools


async def test_no_capability_and_no_remount_even_as_root(
    make_tools: MakeTools, outside: Path
) -> None:
    tools = await sandboxed(make_tools)
    status = await tools.ok("bash", bash("grep -E '^Cap(Eff|Prm|Bnd)' /proc/self/status"))
    assert status.split() == ["CapPrm:", "0" * 16, "CapEff:", "0" * 16, "CapBnd:", "0" * 16]
    escaped = outside / "escaped"
    text = await tools.ok(
        "bash", bash(f"mount -o remount,rw / ; echo x > {escaped}; mknod /tmp/null c 1 3")
    )
    assert not escaped.exists(), text
    assert "Operation not permitted" in text or "permission denied" in text.lower()
    # Nor can it make a user namespace of its own (and be root in it).
    text = await tools.ok("bash", bash("unshare -Ur id -u || echo refused"))
    assert text.startswith("refused"), text
    uid = (await tools.ok("bash", bash("id -u"))).strip()
    assert uid != "0"


async def test_a_unix_socket_outside_the_workspace_gets_nothing(
    make_tools: MakeTools, outside: Path
) -> None:
    path = outside / "server.sock"
    seen = asyncio.Event()

    def accepted(_reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        seen.set()
        writer.close()

    server = await asyncio.start_unix_server(accepted, path=str(path))
    os.chmod(path, 0o777)
    tools = await sandboxed(make_tools)
    client = (
        "import socket\n"
        "s = socket.socket(socket.AF_UNIX)\n"
        f"s.connect({str(path)!r})\n"
        "s.sendall(b'hi')\n"
        "print('connected')\n"
    )
    async with server:
        text = await tools.ok("bash", bash(f"python3 -c {_quote(client)}"))
        assert "connected" not in text
        assert "PermissionError" in text or "Operation not permitted" in text
    assert not seen.is_set()
    # What programs use inside: a connected pair, and asyncio (which makes one).
    inside = "import asyncio, socket; socket.socketpair(); asyncio.run(asyncio.sleep(0)); print(1)"
    assert await tools.ok("bash", bash(f"python3 -c {_quote(inside)}")) == "1\n"


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def _git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True)
    return done.stdout


async def test_control_files_stay_read_only_in_a_writable_workspace(
    make_tools: MakeTools, tmp_path: Path
) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    _git(root, "init", "-q")
    (root / ".claude").mkdir()
    (root / ".claude" / "settings.json").write_text("{}\n")
    config_before = (root / ".git" / "config").read_text()
    hooks_before = sorted(p.name for p in (root / ".git" / "hooks").iterdir())
    tools = await sandboxed(make_tools, root)
    attacks = [
        "echo '{\"hooks\": {}}' > .claude/settings.json",
        "echo '{\"mcpServers\": {}}' > .mcp.json",
        "echo 'sandbox: {mode: danger-full-access}' > dsh.yml",
        "mkdir -p .dsh && echo x > .dsh/settings.json",
        "printf '#!/bin/sh\\necho pwned\\n' > .git/hooks/pre-commit",
        "git config core.hooksPath /var/tmp",
        "mkdir -p .vscode && echo {} > .vscode/tasks.json",
    ]
    for attack in attacks:
        text = await tools.ok("bash", bash(attack))
        assert not text.endswith("[exit code: 0]") and text != "", (attack, text)
    # The workspace itself stays writable, and git works in it.
    await tools.ok("bash", bash("echo code > main.py && git add main.py"))
    assert (root / "main.py").read_text() == "code\n"
    assert (root / ".claude" / "settings.json").read_text() == "{}\n"
    assert (root / ".git" / "config").read_text() == config_before
    assert sorted(p.name for p in (root / ".git" / "hooks").iterdir()) == hooks_before
    # The placeholders that held absent paths are gone once the command ended.
    for absent in (".mcp.json", "dsh.yml", ".dsh", ".vscode", ".idea"):
        assert not (root / absent).exists(), absent
    assert "core.hookspath" not in _git(root, "config", "--list").lower()


async def test_the_file_tools_ask_before_changing_a_control_file(
    make_tools: MakeTools, tmp_path: Path
) -> None:
    tools = await sandboxed(make_tools)
    asked = approving(tools)
    await tools.ok("write", {"file_path": "notes.md", "content": "x"})
    assert asked == []  # the policy allows writes
    await tools.ok("write", {"file_path": ".mcp.json", "content": "{}"})
    await tools.ok("write", {"file_path": ".claude/settings.json", "content": "{}"})
    assert [str(r.reason) for r in asked] == [
        ".mcp.json is a control file of the workspace",
        ".claude/ is a control file of the workspace",
    ]


@pytest.fixture
def home(monkeypatch: pytest.MonkeyPatch, outside: Path) -> Path:
    """A home outside /tmp with a planted key and a harmless file beside it."""
    home = outside / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("-----BEGIN PLANTED KEY-----\n")
    (home / "notes.txt").write_text("visible\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("DSH_HOME", str(home / ".dsh"))
    return home


async def test_secrets_are_not_readable_by_commands_or_file_tools(
    make_tools: MakeTools, home: Path
) -> None:
    tools = await sandboxed(make_tools, home)  # even with the home as the workspace
    text = await tools.ok("bash", bash("cat ~/.ssh/id_rsa; ls -A ~/.ssh; cat ~/notes.txt"))
    assert "PLANTED" not in text
    assert "No such file or directory" in text  # the masked folder is empty
    assert "visible" in text
    message = await tools.error("read", {"file_path": str(home / ".ssh" / "id_rsa")})
    assert "keeps unreadable" in message
    message = await tools.error("grep", {"pattern": "KEY", "path": ".ssh"})
    assert "keeps unreadable" in message
    # A `~` in a tool's path is a folder's name (no tool expands it): the check resolves the
    # file the tool opens (home/.ssh/id_rsa here), not $HOME/../.ssh/id_rsa.
    message = await tools.error("read", {"file_path": "~/../.ssh/id_rsa"})
    assert "keeps unreadable" in message


async def test_a_fork_bomb_is_bounded_and_dsh_survives(make_tools: MakeTools) -> None:
    tools = await sandboxed(make_tools, limits={"processes": 64})
    bomb = (
        "import os, signal\n"
        "forked = 0\n"
        "while forked < 10000:\n"
        "    try:\n"
        "        pid = os.fork()\n"
        "    except OSError:\n"
        "        break\n"
        "    if pid == 0:\n"
        "        signal.pause()  # holds its process slot until the command's end kills it\n"
        "        os._exit(0)\n"
        "    forked += 1\n"
        "print('forked', forked)\n"
    )
    text = await tools.ok("bash", bash(f"python3 -c {_quote(bomb)}"))
    forked = int(text.split()[1])
    assert 0 < forked < 64, text
    # The sleepers ended with the command; the next one runs as usual.
    assert await tools.ok("bash", bash("echo still here")) == "still here\n"


async def test_a_file_cannot_grow_past_the_limit(make_tools: MakeTools) -> None:
    tools = await sandboxed(make_tools, limits={"file_size_mb": 1})
    text = await tools.ok("bash", bash("head -c 2000000 /dev/zero > big.bin; echo $?"))
    assert (tools.root / "big.bin").stat().st_size <= 1024 * 1024
    assert "File size limit exceeded" in text or text.rstrip().endswith("153")


@pytest.fixture
async def index() -> AsyncIterator[int]:
    """A loopback "package index": answers every GET with `index page`."""

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\nConnection: close\r\n\r\nindex page"
        )
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    async with server:
        yield server.sockets[0].getsockname()[1]


FETCH = (
    "import sys, urllib.request\n"
    "try:\n"
    "    print(urllib.request.urlopen(sys.argv[1], timeout=10).read().decode())\n"
    "except Exception as exc:\n"
    "    print('refused:', exc)\n"
)


async def test_the_allow_list_lets_listed_hosts_through_and_nothing_else(
    make_tools: MakeTools, index: int
) -> None:
    listed = {"allow_hosts": [f"127.0.0.1:{index}"], "allow_private": True}
    tools = await sandboxed(make_tools, network=listed)
    # The bridge sends loopback addresses around the proxy (NO_PROXY): here the "index" is one.
    fetch = f"NO_PROXY= no_proxy= python3 -c {_quote(FETCH)}"
    assert await tools.ok("bash", bash(f"{fetch} http://127.0.0.1:{index}/simple/")) == (
        "index page\n"
    )
    text = await tools.ok("bash", bash(f"{fetch} http://127.0.0.1:{index + 1}/simple/"))
    assert text.startswith("refused: HTTP Error 403"), text
    # Not through the proxy: nothing (the network namespace is the sandbox's own).
    text = await tools.ok("bash", bash(f"python3 -c {_quote(FETCH)} http://127.0.0.1:{index}/"))
    assert text.startswith("refused:"), text
    # Without the test switch, a listed host on a loopback address is refused as well.
    tools = await sandboxed(make_tools, network={"allow_hosts": [f"127.0.0.1:{index}"]})
    text = await tools.ok("bash", bash(f"{fetch} http://127.0.0.1:{index}/simple/"))
    assert text.startswith("refused: HTTP Error 403"), text


async def test_read_deny_rules_of_trusted_settings_mask_paths_too(
    make_tools: MakeTools, home: Path
) -> None:
    root = home / "project"
    (root / ".claude").mkdir(parents=True)
    (root / ".env").write_text("TOKEN=planted-env\n")
    (home / "vault").mkdir()
    (home / "vault" / "key").write_text("planted-vault\n")
    rules = {"permissions": {"deny": ["Read(./.env)", "Read(~/vault/**)", "Bash(rm:*)"]}}
    (root / ".claude" / "settings.json").write_text(json.dumps(rules))
    tools = await sandboxed(make_tools, root)
    command = bash("cat .env ~/vault/key")
    assert "planted" in await tools.ok("bash", command)  # an untrusted project's rules: none
    Trust().trust(root)
    tools.ctx.require(APPROVAL).permissions.reload()  # (read again at once, not in 0.5 s)
    text = await tools.ok("bash", command)
    assert "planted" not in text, text


async def test_without_user_namespaces_the_sandbox_is_unavailable_not_privileged(
    make_tools: MakeTools, tmp_path: Path
) -> None:
    """A kernel or container that refuses user namespaces: never a sandbox that keeps root's
    capabilities instead; every command asks, and the reason says why."""
    fake = tmp_path / "bwrap"
    fake.write_text(
        "#!/bin/sh\n"
        'case " $* " in *" --unshare-user "*)\n'
        '  echo "bwrap: No permissions to create new namespace" >&2; exit 1;;\n'
        "esac\n"
        'exec bwrap "$@"\n'
    )
    fake.chmod(0o755)
    tools = await sandboxed(make_tools, bwrap=str(fake))
    asked = approving(tools)
    assert await tools.ok("bash", bash("echo ran")) == "ran\n"
    [request] = asked
    assert "No permissions to create new namespace" in str(request.reason)


async def test_commands_at_once_in_one_workspace_keep_its_control_files_held(
    make_tools: MakeTools, tmp_path: Path
) -> None:
    """The first command's end must not take away what holds the second's control paths
    (nor fail it), and the last one out leaves no placeholder behind."""
    root = tmp_path / "ws"
    root.mkdir()
    for name in ("up1", "first", "up2", "second"):
        os.mkfifo(root / name)
    tools = await sandboxed(make_tools, root)

    def started(name: str) -> None:
        assert (root / name).read_text() == "up\n"  # (blocks until the command writes)

    def release(name: str) -> None:
        (root / name).write_text("go\n")  # (blocks until the command reads)

    one = asyncio.ensure_future(tools.ok("bash", bash("echo up > up1; cat first")))
    await asyncio.to_thread(started, "up1")
    attack = "echo up > up2; cat second; echo '{}' > .mcp.json; mkdir -p .dsh/x; echo done"
    two = asyncio.ensure_future(tools.ok("bash", bash(attack)))
    await asyncio.to_thread(started, "up2")
    await asyncio.to_thread(release, "first")
    assert (await one).startswith("go")
    await asyncio.to_thread(release, "second")
    text = await two
    assert "bwrap" not in text and "Read-only file system" in text, text
    for absent in (".mcp.json", "dsh.yml", ".dsh", ".vscode", ".idea", ".claude"):
        assert not (root / absent).exists(), absent
