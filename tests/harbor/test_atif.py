"""`dsh sessions export ID --format atif` and `dsh.atif.to_atif`: a scripted session with
reasoning, tools and a subagent, and a log of the reference runtime, validated by Harbor's
own ATIF models."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from dsh.atif import SessionLog, export_session, to_atif
from dsh.persistence import JsonlBackend, StoredSessions
from tests.conftest import FIXTURES
from tests.harbor.conftest import validate_atif
from tests.harbor.support import DSH, dsh, dsh_env, scripted_run
from tests.persistence.conftest import install_fixture_log

# DeepSeek's price of deepseek-v4-pro (USD per million tokens): cache hit, miss, output.
HIT, MISS, OUT = 0.003625, 0.435, 0.87


def cost(fresh: int, cached: int, output: int) -> float:
    return (fresh * MISS + cached * HIT + output * OUT) / 1_000_000


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The scripted session, run by `dsh run` and exported by `dsh sessions export`."""
    return asyncio.run(export(tmp_path_factory.mktemp("atif")))


async def export(base: Path) -> dict[str, Any]:
    session_id, env, ws = await scripted_run(base)
    out = base / "trajectory.json"
    await dsh(
        ["sessions", "export", session_id[8:16], "--format", "atif", "--out", str(out)], env, ws
    )
    trajectory: dict[str, Any] = json.loads(out.read_text())
    trajectory["_id"] = session_id
    return trajectory


def test_steps_carry_the_prompt_reasoning_calls_and_observations(
    exported: dict[str, Any],
) -> None:
    steps = exported["steps"]
    assert [s["step_id"] for s in steps] == list(range(1, len(steps) + 1))
    assert exported["schema_version"] == "ATIF-v1.7"
    assert exported["session_id"] == exported["_id"]
    assert exported["agent"]["name"] == "dsh" and exported["agent"]["model_name"] == (
        "deepseek-v4-pro"
    )
    assert {t["function"]["name"] for t in exported["agent"]["tool_definitions"]} >= {
        "bash",
        "subagent",
    }
    user = [s for s in steps if s["source"] == "user"]
    assert [s["message"] for s in user] == ["Write hello.txt."]
    agent = [s for s in steps if s["source"] == "agent"]
    assert [s.get("reasoning_content") for s in agent] == [
        "A subagent can look first.",
        "Now write the file.",
        None,
    ]
    assert [s["message"] for s in agent] == ["", "", "Wrote hello.txt."]
    sub, bash = agent[0]["tool_calls"][0], agent[1]["tool_calls"][0]
    assert sub == {
        "tool_call_id": "call_sub",
        "function_name": "subagent",
        "arguments": {"description": "look around", "prompt": "List the files here."},
    }
    assert bash["function_name"] == "bash" and bash["arguments"]["command"].startswith("echo")
    (result,) = agent[1]["observation"]["results"]
    assert result["source_call_id"] == "call_bash"
    (result,) = agent[0]["observation"]["results"]
    assert result["content"] == "There is nothing here yet."
    assert {s["source"] for s in steps} <= {"system", "user", "agent"}


def test_metrics_per_step_and_in_total_include_the_subagent(
    exported: dict[str, Any],
) -> None:
    agent = [s for s in exported["steps"] if s["source"] == "agent"]
    first = agent[0]["metrics"]
    assert first["prompt_tokens"] == 1000 and first["cached_tokens"] == 100
    assert first["completion_tokens"] == 40
    assert first["cost_usd"] == pytest.approx(cost(900, 100, 40))
    final = exported["final_metrics"]
    assert final["total_prompt_tokens"] == 1000 + 300 + 1060 + 1140
    assert final["total_cached_tokens"] == 100 + 1000 + 1100
    assert final["total_completion_tokens"] == 40 + 10 + 20 + 8
    parent = cost(900, 100, 40) + cost(60, 1000, 20) + cost(40, 1100, 8)
    assert final["total_cost_usd"] == pytest.approx(parent + cost(300, 0, 10))
    assert final["total_steps"] == len(exported["steps"])


def test_the_subagent_is_embedded_and_referenced_from_its_call(
    exported: dict[str, Any],
) -> None:
    (child,) = exported["subagent_trajectories"]
    assert child["trajectory_id"] != exported["session_id"]
    assert [s["message"] for s in child["steps"] if s["source"] == "user"] == [
        "List the files here."
    ]
    assert child["steps"][-1]["message"] == "There is nothing here yet."
    call_step = next(
        s
        for s in exported["steps"]
        if s.get("tool_calls", [{}])[0].get("tool_call_id") == "call_sub"
    )
    (result,) = call_step["observation"]["results"]
    assert result["subagent_trajectory_ref"] == [
        {"trajectory_id": child["trajectory_id"], "session_id": child["trajectory_id"]}
    ]


def test_harbors_models_accept_the_export(exported: dict[str, Any], harbor_python: Path) -> None:
    given = {k: v for k, v in exported.items() if k != "_id"}
    read = validate_atif(harbor_python, {"scripted": given})["scripted"]
    assert read["steps"] == given["steps"]
    assert (
        read["subagent_trajectories"][0]["trajectory_id"]
        == (given["subagent_trajectories"][0]["trajectory_id"])
    )


@pytest.mark.parametrize("scenario", ["tools3", "bash2", "multi-turn"])
async def test_a_reference_runtime_log_exports_and_validates(
    scenario: str, tmp_path: Path, harbor_python: Path
) -> None:
    session_id, _ = install_fixture_log(FIXTURES / "ts-logs" / scenario / "session.jsonl", tmp_path)
    stored = await StoredSessions(JsonlBackend(tmp_path)).load(session_id)
    trajectory = to_atif(stored.events, stored.header)
    calls = [c for s in trajectory["steps"] for c in s.get("tool_calls", [])]
    results = [r for s in trajectory["steps"] for r in s.get("observation", {}).get("results", [])]
    assert calls and [r["source_call_id"] for r in results] == [c["tool_call_id"] for c in calls]
    assert trajectory["final_metrics"]["total_prompt_tokens"] > 0
    assert trajectory["final_metrics"]["total_cost_usd"] > 0  # deepseek-official's price
    agent = [s for s in trajectory["steps"] if s["source"] == "agent"]
    assert {s.get("reasoning_effort") for s in agent} == {"high"}  # the request header's
    validate_atif(harbor_python, {scenario: trajectory})


def test_a_log_without_messages_is_refused() -> None:
    from dsh.session import SessionHeader

    with pytest.raises(ValueError, match="no messages"):
        to_atif([], SessionHeader(id="session-x", created_at=0))
    assert SessionLog(SessionHeader(id="s", created_at=0), ()).events == ()


async def test_a_format_4_log_of_the_published_runtime_exports_and_validates(
    tmp_path: Path, harbor_python: Path
) -> None:
    shutil.copytree(FIXTURES / "jsonrpc" / "two-tools" / "sessions", tmp_path / "sessions")
    stored = StoredSessions(JsonlBackend(tmp_path / "sessions"))
    (header,) = await stored.list()
    trajectory = await export_session(stored, header.id)
    steps = trajectory["steps"]
    assert steps[0]["source"] == "system"  # format 4 logs the system prompt as a message
    assert [s["message"] for s in steps if s["source"] == "user"] == [
        "Read hello.txt twice, then answer. steps=2"
    ]
    assert sum(len(s.get("tool_calls", [])) for s in steps) == 2
    assert "total_cost_usd" not in trajectory["final_metrics"]  # a route without a price
    validate_atif(harbor_python, {"v4": trajectory})


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["nope"], "no stored session 'nope'"),
        (["nope", "--format", "xml"], "unknown format 'xml'"),
    ],
)
def test_export_refuses_in_one_line(args: list[str], said: str, tmp_path: Path) -> None:
    env = dsh_env(tmp_path, "http://127.0.0.1:9")
    done = subprocess.run(
        [*DSH, "sessions", "export", *args], capture_output=True, text=True, env=env
    )
    assert done.returncode == 2 and said in done.stderr and not done.stdout
