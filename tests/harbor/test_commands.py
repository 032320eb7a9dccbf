"""The Harbor agent's commands as text (no Harbor needed): the model name, the install
script's shape, the run command, the MCP file, and the figures of a run's result line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

import dsh.harbor
from dsh.harbor import (
    dsh_model,
    install_script,
    mcp_file,
    read_figures,
    run_command,
    source_tree,
    stage_source,
)
from tests.conftest import REPO


def test_dsh_harbor_names_the_agent_it_builds_on_first_access() -> None:
    assert "DshAgent" in dsh.harbor.__all__


def test_harbor_model_names_become_dsh_routes() -> None:
    assert dsh_model("deepseek/deepseek-v4-pro") == "deepseek:deepseek-v4-pro"
    assert dsh_model("openai/qwen/qwen3-coder") == "openai:qwen/qwen3-coder"
    assert dsh_model("deepseek-v4-flash") == "deepseek-v4-flash"


def test_the_install_script_finds_a_python_311_and_installs_the_requirement() -> None:
    script = install_script("/installed-agent/dsh-0.1.0-py3-none-any.whl[mcp]")
    assert subprocess.run(["bash", "-n"], input=script, text=True).returncode == 0
    assert "requirement='/installed-agent/dsh-0.1.0-py3-none-any.whl[mcp]'" in script
    assert "sys.version_info < (3, 11)" in script and '-m venv "$prefix"' in script
    assert 'pip install --quiet --disable-pip-version-check "$requirement"' in script
    assert '"$uv" venv --python 3.12' in script  # no Python >= 3.11: uv brings one
    assert "\"$prefix/bin/python\" -c 'import dsh.harbor'" in script  # not PyPI's `dsh`
    assert 'ln -sf "$prefix/bin/dsh" /usr/local/bin/dsh' in script
    assert script.rstrip().endswith("/usr/local/bin/dsh --version")


def test_the_run_command_is_headless_unsandboxed_and_logged(tmp_path: Path) -> None:
    command = run_command(
        "it's a task\n-with a dash", "deepseek:deepseek-v4-pro", PurePosixPath("/logs/agent")
    )
    assert (
        "| dsh run --yes --sandbox danger-full-access --output-format stream-json "
        "-m deepseek:deepseek-v4-pro - 2>/logs/agent/dsh.stderr.txt | tee /logs/agent/dsh.jsonl"
    ) in command
    fake = tmp_path / "dsh"  # a `dsh` that echoes its stdin: the task arrives unchanged
    fake.write_text("#!/bin/sh\ncat\n")
    fake.chmod(0o755)
    logs = tmp_path / "logs"
    done = subprocess.run(
        ["bash", "-c", run_command("it's a task\n-with a dash", None, PurePosixPath(logs))],
        capture_output=True,
        text=True,
        env={"PATH": f"{tmp_path}:/usr/bin:/bin"},
    )
    assert done.stdout == "it's a task\n-with a dash"
    assert (logs / "dsh.jsonl").read_text() == done.stdout
    fake.write_text("#!/bin/sh\necho 'dsh: rate limited (429)' >&2\nexit 1\n")
    failed = subprocess.run(
        ["bash", "-c", "set -o pipefail; " + run_command("task", None, PurePosixPath(logs))],
        capture_output=True,
        text=True,
        env={"PATH": f"{tmp_path}:/usr/bin:/bin"},
    )
    assert failed.returncode == 1 and "rate limited (429)" in failed.stderr


@dataclass
class Server:
    name: str
    transport: str = "stdio"
    url: str | None = None
    command: str | None = None
    args: list[str] = field(default_factory=list)
    headers: dict[str, str] = field(default_factory=dict)


def test_harbors_mcp_servers_become_an_mcp_json() -> None:
    servers = [
        Server("files", command="npx", args=["-y", "server-files"]),
        Server("search", "streamable-http", "http://mcp:8000/mcp", headers={"X-Key": "${KEY}"}),
        Server("old", "sse", "http://mcp:8001/sse"),
    ]
    assert json.loads(mcp_file(servers)) == {
        "mcpServers": {
            "files": {"command": "npx", "args": ["-y", "server-files"]},
            "search": {
                "type": "http",
                "url": "http://mcp:8000/mcp",
                "headers": {"X-Key": "${KEY}"},
            },
            "old": {"type": "sse", "url": "http://mcp:8001/sse"},
        }
    }


def test_figures_come_from_the_last_result_line(tmp_path: Path) -> None:
    assert read_figures(tmp_path) is None
    usage = {
        "input_tokens": 950,
        "cache_creation_input_tokens": 5,
        "cache_read_input_tokens": 1100,
        "output_tokens": 38,
    }
    lines = [
        {"type": "system", "subtype": "init", "session_id": "session-1"},
        "not json",
        {
            "type": "result",
            "session_id": "session-1",
            "total_cost_usd": 0.00045,
            "usage": usage,
            "finish_reason": "completed",
        },
    ]
    text = "\n".join(line if isinstance(line, str) else json.dumps(line) for line in lines)
    (tmp_path / "dsh.jsonl").write_text(text + "\n")
    figures = read_figures(tmp_path)
    assert figures is not None
    assert (figures.n_input_tokens, figures.n_cache_tokens, figures.n_output_tokens) == (
        2055,
        1100,
        38,
    )
    assert figures.cost_usd == 0.00045 and figures.session_id == "session-1"


def test_the_install_script_installs_this_checkout(tmp_path: Path) -> None:
    """The script for real, with this test's Python first on the PATH, into a venv in
    `tmp_path` (pip builds this checkout; its dependencies come from PyPI or pip's cache:
    ~20 s)."""
    assert source_tree() == REPO  # what the agent installs when nothing is named
    staged = stage_source(REPO, tmp_path)
    assert sorted(p.name for p in staged.iterdir()) == ["README.md", "pyproject.toml", "src"]
    assert not list(staged.rglob("__pycache__"))
    script = install_script(str(staged), str(tmp_path / "dsh"), str(tmp_path / "bin"))
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    done = subprocess.run(
        ["bash", "-c", script],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
        env={**os.environ, "PATH": path},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1].startswith("dsh ")
    assert (tmp_path / "bin" / "dsh").resolve() == tmp_path / "dsh" / "bin" / "dsh"


def test_what_the_agent_copies_in_and_installs(tmp_path: Path) -> None:
    from dsh.harbor._agent import _local_source

    staged, requirement = _local_source(None, tmp_path)  # nothing named: this checkout
    assert staged == tmp_path / "dsh-src" and requirement == ""
    assert _local_source("git+https://example.invalid/dsh", tmp_path) == (
        None,
        "git+https://example.invalid/dsh",
    )
    wheel = tmp_path / "dsh-0.1.0-py3-none-any.whl"
    wheel.write_bytes(b"")
    assert _local_source(str(wheel), tmp_path) == (wheel, "")
