"""`dsh.harbor:DshAgent` driven as Harbor drives it, in a Python with Harbor installed,
against a local `BaseEnvironment` and dsh's loopback model server (no network).

The install step is skipped as Harbor's `skip_install` does for an image that has the agent:
the environment's PATH has a `dsh` that runs this checkout (the install script's shape is
checked in test_commands.py; installing from PyPI would test PyPI's copy, not this one)."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from dsh.testing import OpenAIServer
from tests.harbor.conftest import SRC, run_in_harbor, run_in_harbor_async
from tests.harbor.support import delegating_script

HERE = Path(__file__).parent
HIT, MISS, OUT = 0.003625, 0.435, 0.87


def dsh_on_path(folder: Path) -> Path:
    """A folder holding a `dsh` that runs this checkout with this test's Python."""
    folder.mkdir()
    shim = folder / "dsh"
    shim.write_text(
        f"#!/bin/sh\nPYTHONPATH={SRC} exec {sys.executable} -c "
        "'from dsh.cli import main; main()' \"$@\"\n"
    )
    shim.chmod(0o755)
    return folder


@pytest.fixture(scope="module")
def driven(tmp_path_factory: pytest.TempPathFactory, harbor_python: Path) -> dict[str, Any]:
    """One task through the agent (the module's tests read what it left)."""
    return asyncio.run(drive(tmp_path_factory.mktemp("harbor"), harbor_python))


async def drive(base: Path, harbor_python: Path) -> dict[str, Any]:
    bin_dir = dsh_on_path(base / "bin")
    async with OpenAIServer(delegating_script()) as server:
        config = {
            "import_path": "dsh.harbor:DshAgent",
            "model": "deepseek/deepseek-v4-pro",
            "instruction": "Write hello.txt.",
            "workspace": str(base / "app"),
            "trial_dir": str(base / "trial"),
            "mcp_servers": [{"name": "notes", "transport": "sse", "url": "http://127.0.0.1:9/sse"}],
            "env": {  # the container's environment
                "PATH": f"{bin_dir}:/usr/bin:/bin",
                "HOME": str(base / "home"),
            },
            "harbor_env": {  # the Harbor process's: what the agent forwards
                "DEEPSEEK_API_KEY": "sk-test",
                "DEEPSEEK_BASE_URL": server.base_url,
            },
        }
        (base / "config.json").write_text(json.dumps(config))
        driven: dict[str, Any] = await run_in_harbor_async(
            harbor_python, [str(HERE / "drive_agent.py"), str(base / "config.json")]
        )
        assert server.remaining == 0
    driven["base"] = str(base)
    return driven


def test_harbor_imports_the_agent_by_path(driven: dict[str, Any]) -> None:
    assert driven["import_path"] == "dsh.harbor:DshAgent"
    assert driven["name"] == "dsh" and driven["atif"] is True
    assert driven["version"]  # `dsh --version`, read after setup


def test_the_run_is_headless_unsandboxed_with_harbors_model(driven: dict[str, Any]) -> None:
    (run,) = [c for c in driven["commands"] if "dsh run" in c["command"]]
    assert (
        "dsh run --yes --sandbox danger-full-access --output-format stream-json" in (run["command"])
    )
    assert "-m deepseek:deepseek-v4-pro" in run["command"]
    assert {"DEEPSEEK_API_KEY", "DEEPSEEK_BASE_URL", "DSH_SESSION_ROOT"} <= set(run["env"])
    base = Path(driven["base"])
    assert (base / "app" / "hello.txt").read_text() == "hello\n"


def test_the_logs_are_where_harbor_collects_them(driven: dict[str, Any]) -> None:
    logs = driven["logs"]
    assert {"dsh.jsonl", "dsh.stderr.txt", "trajectory.json"} <= set(logs)
    assert sum(1 for p in logs if p.startswith("sessions/") and p.endswith("session.jsonl")) == 2


def test_the_context_has_tokens_cache_hits_and_cost(driven: dict[str, Any]) -> None:
    context = driven["context"]
    # The result line: the parent's three answers and the child's one.
    assert context["n_input_tokens"] == 1000 + 300 + 1060 + 1140
    assert context["n_cache_tokens"] == 100 + 1000 + 1100
    assert context["n_output_tokens"] == 40 + 10 + 20 + 8
    fresh, cached, out = 900 + 300 + 60 + 40, 2200, 78
    assert context["cost_usd"] == pytest.approx((fresh * MISS + cached * HIT + out * OUT) / 1e6)
    assert context["metadata"]["dsh_finish_reason"] == "completed"


def test_the_trajectory_is_atif_with_the_subagent(driven: dict[str, Any]) -> None:
    trajectory = driven["trajectory"]
    assert trajectory["agent"]["name"] == "dsh"
    assert trajectory["session_id"] == driven["context"]["metadata"]["dsh_session_id"]
    final = trajectory["final_metrics"]
    context = driven["context"]
    assert final["total_prompt_tokens"] == context["n_input_tokens"]
    assert final["total_cached_tokens"] == context["n_cache_tokens"]
    assert final["total_cost_usd"] == pytest.approx(context["cost_usd"])
    assert len(trajectory["subagent_trajectories"]) == 1


def test_harbors_mcp_servers_reach_dsh(driven: dict[str, Any]) -> None:
    assert driven["mcp_json"] == {
        "mcpServers": {"notes": {"type": "sse", "url": "http://127.0.0.1:9/sse"}}
    }


def test_importing_dsh_harbor_loads_no_harbor_module(harbor_python: Path) -> None:
    code = (
        "import json, sys, dsh, dsh.harbor, dsh.atif\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] == 'harbor')))"
    )
    assert run_in_harbor(harbor_python, ["-c", code]) == []
