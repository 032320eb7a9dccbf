"""`./dsh.yml` is a file of the folder dsh runs in, so a cloned repository can ship one: it
is read only once that folder is trusted (or for one run with `--trust-workspace`), or when
the user names it with `--profile`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pexpect
import yaml

from dsh.workspace import Trust

from .support import DSH, cli_env, scripted_profile, workspace

NOTE = (
    "dsh: note: dsh.yml is not read: this folder is not trusted (trust it in dsh chat, pass "
    "--trust-workspace to dsh run, or name the file: --profile dsh.yml)"
)


def cloned_repository(tmp_path: Path) -> tuple[Path, Path]:
    """A folder whose dsh.yml mounts a plugin and a hook that leaves a mark when it runs."""
    repo = tmp_path / "repo"
    repo.mkdir()
    mark = tmp_path / "hook-ran"
    hook = {"hooks": [{"type": "command", "command": f"touch {mark}"}]}
    rows = [
        {"id": "extra", "name": "tests.kernel.plugins_for_tests:Recorder"},
        {"id": "hooks", "config": {"hooks": {"UserPromptSubmit": [hook]}}},
        {"id": "approval", "config": {"policy": [{"tool": "*", "action": "allow"}]}},
    ]
    (repo / "dsh.yml").write_text(yaml.safe_dump(rows))
    return repo, mark


def dsh(tmp_path: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *DSH, *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=cli_env(tmp_path),
        cwd=cwd,
    )


def run_args(tmp_path: Path, *extra: str) -> list[str]:
    profile = scripted_profile(tmp_path, ["Done."])
    ws = str(workspace(tmp_path))
    return ["run", "--profile", str(profile), "--provider", "scripted", "--cwd", ws, *extra, "hi"]


def test_an_untrusted_dsh_yml_is_skipped_with_a_note(tmp_path: Path) -> None:
    repo, _ = cloned_repository(tmp_path)
    shown = dsh(tmp_path, repo, "config", "show")
    assert shown.returncode == 0, shown.stderr
    assert "id: extra" not in shown.stdout and "action: allow" not in shown.stdout
    assert shown.stderr.splitlines() == [NOTE]

    named = dsh(tmp_path, repo, "config", "show", "--profile", "dsh.yml")
    assert named.returncode == 0, named.stderr
    assert "id: extra" in named.stdout and named.stderr == ""

    Trust().trust(repo)
    trusted = dsh(tmp_path, repo, "config", "show")
    assert "id: extra" in trusted.stdout and trusted.stderr == ""


def test_an_empty_dsh_yml_is_no_layer_and_no_note(tmp_path: Path) -> None:
    """An empty one sets nothing: it is what the sandbox holds an absent one with while a
    command runs in the folder, which another dsh started meanwhile must not mention."""
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "dsh.yml").write_bytes(b"")
    shown = dsh(tmp_path, repo, "config", "show")
    assert shown.returncode == 0 and shown.stderr == "", shown.stderr


def test_dsh_run_runs_a_cloned_dsh_yml_hook_only_under_trust(tmp_path: Path) -> None:
    repo, mark = cloned_repository(tmp_path)
    result = dsh(tmp_path, repo, *run_args(tmp_path))
    assert result.returncode == 0, result.stderr
    assert NOTE in result.stderr.splitlines()
    assert not mark.exists()

    result = dsh(tmp_path, repo, *run_args(tmp_path, "--trust-workspace"))
    assert result.returncode == 0, result.stderr
    assert "not read" not in result.stderr
    assert mark.exists()


def test_chat_asks_about_the_dsh_yml_and_a_yes_is_remembered(tmp_path: Path) -> None:
    repo, mark = cloned_repository(tmp_path)
    profile = scripted_profile(tmp_path, ["Done."])
    args = [*DSH, "chat", "--profile", str(profile), "--provider", "scripted"]
    child = pexpect.spawn(
        sys.executable,
        [*args, "--model", "scripted", "--cwd", str(workspace(tmp_path))],
        env=cli_env(tmp_path, TERM="xterm"),
        cwd=str(repo),
        timeout=30,
        encoding="utf-8",
        dimensions=(40, 200),
    )
    child.expect(r"not trusted, so what its files define does not run \(.*dsh\.yml\)")
    child.expect(r"Trust this workspace \(hooks, MCP servers\)\? \[y/N\]")
    child.sendline("y")
    child.expect(f"trusted {repo}")
    child.expect("new session session-")
    child.sendline("/exit")
    child.expect(pexpect.EOF)
    assert Trust().is_trusted(repo)

    result = dsh(tmp_path, repo, *run_args(tmp_path))
    assert result.returncode == 0, result.stderr
    assert "not read" not in result.stderr
    assert mark.exists()
