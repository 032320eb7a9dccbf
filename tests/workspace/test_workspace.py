"""Settings files, their layering, and workspace trust."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest

from dsh.workspace import (
    PassMemo,
    SettingsError,
    Trust,
    dsh_home,
    edit_json_file,
    load_settings,
    open_private,
    private_dirs,
)
from tests.conftest import mode


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    monkeypatch.setenv("DSH_HOME", str(tmp_path / "user" / ".dsh"))
    return tmp_path / "user" / ".dsh"


def _write(path: Path, data: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


def test_dsh_home_follows_the_environment(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert dsh_home() == home
    monkeypatch.delenv("DSH_HOME")
    assert dsh_home() == Path.home() / ".dsh"


def test_layers_come_user_project_local_with_dsh_after_claude(home: Path, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    _write(Path.home() / ".claude" / "settings.json", {"k": "claude-user"})
    _write(home / "settings.json", {"k": "dsh-user"})
    _write(ws / ".claude" / "settings.json", {"k": "claude-project"})
    _write(ws / ".dsh" / "settings.json", {"k": "dsh-project"})
    _write(ws / ".dsh" / "settings.local.json", {"k": "dsh-local"})
    Trust().trust(ws)
    settings = load_settings(ws)
    assert [value for _, value in settings.values("k")] == [
        "claude-user",
        "dsh-user",
        "claude-project",
        "dsh-project",
        "dsh-local",
    ]
    without_compat = load_settings(ws, claude_compat=False)
    assert [v for _, v in without_compat.values("k")] == ["dsh-user", "dsh-project", "dsh-local"]


def test_workspace_files_are_skipped_until_the_workspace_is_trusted(
    home: Path, tmp_path: Path
) -> None:
    ws = tmp_path / "repo"
    _write(home / "settings.json", {"hooks": "user"})
    _write(ws / ".dsh" / "settings.json", {"hooks": "cloned"})
    settings = load_settings(ws)
    assert [v for _, v in settings.values("hooks")] == ["user"]
    assert [layer.source.path for layer in settings.untrusted] == [ws / ".dsh" / "settings.json"]
    assert [v for _, v in settings.values("hooks", untrusted=True)] == ["user", "cloned"]

    Trust().trust(ws)
    assert [v for _, v in load_settings(ws / "sub").values("hooks")] == ["user"]
    assert [v for _, v in load_settings(ws).values("hooks")] == ["user", "cloned"]


def test_trust_covers_subfolders_and_can_be_revoked(home: Path, tmp_path: Path) -> None:
    trust = Trust()
    (tmp_path / "repo" / "pkg").mkdir(parents=True)
    assert not trust.is_trusted(tmp_path / "repo")
    trust.trust(tmp_path / "repo")
    assert trust.trusted_root(tmp_path / "repo" / "pkg") == (tmp_path / "repo").resolve()
    assert not trust.is_trusted(tmp_path)
    assert trust.revoke(tmp_path / "repo")
    assert not trust.revoke(tmp_path / "repo")
    assert not trust.is_trusted(tmp_path / "repo" / "pkg")


@pytest.mark.parametrize(
    ("text", "problem"),
    [("{oops", "line 1 column 2: invalid JSON"), ("[1]", "expected a JSON object, found list")],
)
def test_a_bad_settings_file_is_one_line_naming_it(
    home: Path, tmp_path: Path, text: str, problem: str
) -> None:
    (home).mkdir(parents=True)
    (home / "settings.json").write_text(text)
    with pytest.raises(SettingsError) as caught:
        load_settings(tmp_path)
    message = str(caught.value)
    assert message.startswith(f"{home / 'settings.json'}: ")
    assert problem in message
    assert "\n" not in message


def test_edit_json_file_keeps_other_keys_and_creates_folders(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b.json"
    edit_json_file(path, lambda d: d.update(x=1))
    edit_json_file(path, lambda d: d.update(y=[2]))
    assert json.loads(path.read_text()) == {"x": 1, "y": [2]}
    assert [p.name for p in path.parent.iterdir()] == ["b.json"]


# -- files only the user can read --------------------------------------------------------------


@pytest.mark.usefixtures("umask_022")
def test_trust_and_settings_files_are_0600_in_folders_made_0700(home: Path, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir(mode=0o755)
    Trust().trust(ws)
    edit_json_file(home / "settings.json", lambda data: data.update(model="m"))
    local = ws / ".dsh" / "settings.local.json"
    edit_json_file(local, lambda data: data.update(permissions={"allow": ["Read"]}))
    for path in (home / "trusted-workspaces.json", home / "settings.json", local):
        assert mode(path) == 0o600, path
    for folder in (home.parent, home, local.parent):
        assert mode(folder) == 0o700, folder
    assert mode(ws) == 0o755  # the workspace is the user's: left as it was
    assert Trust().is_trusted(ws)


@pytest.mark.usefixtures("umask_022")
def test_an_existing_0644_settings_file_still_reads_and_is_written_back_0600(
    home: Path,
) -> None:
    _write(home / "settings.json", {"model": "m"})
    (home / "settings.json").chmod(0o644)
    home.chmod(0o755)
    edit_json_file(home / "settings.json", lambda data: data.update(effort="high"))
    assert json.loads((home / "settings.json").read_text()) == {"model": "m", "effort": "high"}
    assert mode(home / "settings.json") == 0o600 and mode(home) == 0o755


@pytest.mark.usefixtures("umask_022")
def test_private_dirs_makes_only_missing_folders_0700(tmp_path: Path) -> None:
    tmp_path.chmod(0o755)
    deep = tmp_path / "a" / "b" / "c"
    assert private_dirs(deep) == deep
    assert [mode(p) for p in (tmp_path, deep.parent.parent, deep.parent, deep)] == [
        0o755,
        0o700,
        0o700,
        0o700,
    ]
    (tmp_path / "a").chmod(0o750)
    private_dirs(deep)  # all there: nothing changes
    assert mode(tmp_path / "a") == 0o750
    (tmp_path / "file").write_text("")
    with pytest.raises(FileExistsError):
        private_dirs(tmp_path / "file")


@pytest.mark.usefixtures("umask_022")
def test_open_private_creates_0600_and_never_loosens_or_overwrites(tmp_path: Path) -> None:
    path = tmp_path / "new"
    os.close(open_private(path))
    assert mode(path) == 0o600
    with pytest.raises(FileExistsError):
        open_private(path)
    old = tmp_path / "old"
    old.write_text("kept")
    os.close(open_private(old, os.O_WRONLY | os.O_CREAT | os.O_APPEND))
    assert mode(old) == 0o644 and old.read_text() == "kept"


async def test_a_pass_memo_computes_once_per_pass_of_the_event_loop() -> None:
    made: list[str] = []

    def compute(key: str) -> str:
        made.append(key)
        return f"{key}{len(made)}"

    memo = PassMemo(compute)
    first = [memo.get("a") for _ in range(100)]  # one pass: every caller shares one value
    assert first == ["a1"] * 100 and memo.get("b") == "b2"
    await asyncio.sleep(0)  # the next pass looks again
    assert memo.get("a") == "a3" and made == ["a", "b", "a"]


def test_outside_an_event_loop_a_pass_memo_computes_at_every_call() -> None:
    made: list[int] = []
    memo = PassMemo(lambda key: made.append(key) or len(made))
    assert [memo.get(1), memo.get(1)] == [1, 2]
