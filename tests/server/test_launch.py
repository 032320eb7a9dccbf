"""`dsh-jsonrpc-agent` launched as the reference SDK launches its runtime: `--profile NAME`,
`--patch FILE`, `DSH_HOME` and no `DSH_SESSION_ROOT`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from dsh.client import AsyncHarness
from dsh.server._launch import Launch, LaunchError, compose, parse_args
from dsh.testing import OpenAIServer, reply, tool_call
from tests.cli.support import CHILD_PYTHONPATH
from tests.conftest import home_and_workspace

REFERENCE_PATCH = """\
- id: session-persistence-jsonl
  config:
    root: {root}
    compression: none
    packChunks: false
- id: dsh-sdk-app
  config: {{telemetry: false}}
- id: session-title
  config:
    model: !!js process.env.TITLE_MODEL
- id: retry
  config: {{max_retries: 1}}
"""


def test_the_sdk_flags_parse() -> None:
    launch = parse_args(["--profile", "sdk", "--patch", "a.yml", "--patch=b.yml"])
    assert launch == Launch("sdk", (Path("a.yml"), Path("b.yml")))
    assert parse_args([]) == Launch()
    for bad in (["--verbose"], ["--profile"], ["--profile", "../x"], ["--patch="]):
        with pytest.raises(LaunchError):
            parse_args(bad)


def test_profile_makes_logs_format_4_and_layers_our_own_profile_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DSH_HOME", str(tmp_path))
    profile = compose(Launch("sdk"), print)
    persistence = profile.row("persistence")
    assert persistence is not None and persistence.config == {"format": "v4"}
    assert compose(Launch(), print).row("persistence").config is None  # type: ignore[union-attr]
    # Our own profile file of that name (the reference keeps its cordis files beside it).
    named = tmp_path / "profiles" / "sdk"
    named.mkdir(parents=True)
    (named / "cordis.yml").write_text("[]\n")
    (named / "dsh.yml").write_text(yaml.safe_dump([{"id": "retry", "config": {"max_retries": 7}}]))
    profile = compose(Launch("sdk"), print)
    retry = profile.row("retry")
    assert retry is not None and retry.config == {"max_retries": 7}
    assert retry.source == str(named / "dsh.yml")


def test_patch_rows_we_know_apply_and_the_others_are_reported(tmp_path: Path) -> None:
    patch = tmp_path / "persistence.patch.yml"
    patch.write_text(REFERENCE_PATCH.format(root=tmp_path / "sessions"))
    reported: list[str] = []
    profile = compose(Launch("sdk", (patch,)), reported.append)
    persistence = profile.row("persistence")
    assert persistence is not None and persistence.config == {
        "format": "v4",
        "root": str(tmp_path / "sessions"),
        "compression": "none",
    }
    retry = profile.row("retry")
    assert retry is not None and retry.config == {"max_retries": 1}
    assert reported == [
        f'dsh-jsonrpc-agent: --patch {patch}: row "session-persistence-jsonl" applied to '
        "persistence; ignored: packChunks",
        f'dsh-jsonrpc-agent: --patch {patch}: row "dsh-sdk-app" skipped: no plugin with this '
        "id here",
        f'dsh-jsonrpc-agent: --patch {patch}: row "session-title" skipped: it holds a !!js '
        "expression",
    ]


def test_bad_arguments_and_patch_files_are_one_line_and_exit_2(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yml"
    broken.write_text("- id: [unclosed\n")
    for args, says in (
        (["--verbose"], "unknown argument '--verbose'"),
        (["--patch", str(tmp_path / "missing.yml")], "cannot read"),
        (["--patch", str(broken)], "invalid YAML"),
    ):
        result = subprocess.run(
            [sys.executable, "-m", "dsh.server", *args],
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
            env={**os.environ, "PYTHONPATH": CHILD_PYTHONPATH},
        )
        assert result.returncode == 2, result.stderr
        assert says in result.stderr and len(result.stderr.strip().splitlines()) == 1
        assert "Traceback" not in result.stderr


async def test_launched_like_the_sdk_sessions_land_in_dsh_home_as_format_4(
    tmp_path: Path,
) -> None:
    home, ws = home_and_workspace(tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DEEPSEEK_", "DSH_"))}
    script = [reply(tool_call("read", {"file_path": "hello.txt"})), "Done after 1 tool calls."]
    async with OpenAIServer(script) as server:
        env |= {
            "DSH_HOME": str(home),
            "DEEPSEEK_BASE_URL": server.base_url,
            "DEEPSEEK_API_KEY": "sk-loopback",
            "HOME": str(tmp_path),
            "PYTHONPATH": CHILD_PYTHONPATH,
        }
        command = (sys.executable, "-m", "dsh.server", "--profile", "sdk")
        async with AsyncHarness(
            provider="deepseek-official", model="fake-model", cwd=str(ws), env=env, command=command
        ) as h:
            result = await h.run("Read hello.txt once. steps=1", session_id="session-home")
    assert result.final_response == "Done after 1 tool calls."
    folder = home / "sessions" / f"--{str(ws).strip('/').replace('/', '-')}--" / "session-home"
    # the log alone; the rewind plugin's store is the workspace's, in $DSH_HOME
    assert [p.name for p in folder.iterdir()] == ["session.v4.jsonl.zstd"]
    assert len(list((home / "rewind" / "workspaces").iterdir())) == 1
    from dsh.persistence import JsonlBackend, StoredSessions

    stored = await StoredSessions(JsonlBackend(home / "sessions")).inspect("session-home")
    kinds = [e.type for e in stored.events]
    assert stored.header.version == 4 and kinds[-1] == "turn/end"
    assert kinds.index("system/message") < kinds.index("user/message")
    notified = [e["type"] for e in result.events]
    assert "system/message" in notified and json.dumps(result.events)  # frames are plain JSON
