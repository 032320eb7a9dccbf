"""Settings files, their layering, and workspace trust."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dsh.workspace import SettingsError, Trust, dsh_home, edit_json_file, load_settings


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
