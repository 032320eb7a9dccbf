"""`dsh run` at a budget, through a real subprocess: exit 4, one line naming the limit, and
the session continues with `-c` once the limit is raised."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from .test_run import dsh

SHOUT = {"tool": "shout", "args": {"text": "hey"}}


def test_max_steps_exits_4_with_the_limit_and_continue_goes_on(tmp_path: Path) -> None:
    stopped = dsh(tmp_path, [SHOUT, SHOUT, SHOUT, "Done."], "--yes", "--max-turns", "2", "go")
    assert stopped.returncode == 4, stopped.stderr
    lines = stopped.stderr.splitlines()
    assert any(line.endswith("· budget reached: max-steps 2 per run") for line in lines)
    assert "→ nothing is lost: raise --max-steps and continue with dsh run -c" in lines
    assert stopped.stderr.count('shout(text="hey")') == 2
    # A run limit: the next run starts afresh.
    resumed = dsh(tmp_path, ["Done after all."], "--yes", "-c", "--max-steps", "2", "go on")
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.strip() == "Done after all."


def test_a_session_limit_holds_until_raised(tmp_path: Path) -> None:
    def limit(steps: int) -> str:
        layer = tmp_path / f"limit-{steps}.yml"
        row = {"id": "usage", "config": {"session_limits": {"max_steps": steps}}}
        layer.write_text(yaml.safe_dump([row]))
        return str(layer)

    first = dsh(tmp_path, [SHOUT, SHOUT, SHOUT], "--yes", "--profile", limit(2), "go")
    assert first.returncode == 4, first.stderr
    assert "budget reached: max-steps 2 per session" in first.stderr
    again = dsh(tmp_path, ["Never sent."], "--yes", "-c", "--profile", limit(2), "--json", "go")
    assert again.returncode == 4, again.stderr
    events = [json.loads(line) for line in again.stdout.splitlines()]
    assert not [e for e in events if e["type"] == "step/start"]  # no model request
    assert events[-1]["data"]["reason"] == {
        "kind": "aborted",
        "reason": {"kind": "hook", "reason": "budget:session:max-steps=2"},
    }
    raised = dsh(tmp_path, ["Finished."], "--yes", "-c", "--profile", limit(5), "go on")
    assert raised.returncode == 0, raised.stderr
    assert raised.stdout.strip() == "Finished."


def test_a_warning_at_80_percent_and_the_tool_call_limit(tmp_path: Path) -> None:
    script = [SHOUT] * 7
    result = dsh(tmp_path, script, "--yes", "--max-tool-calls", "5", "--max-steps", "50", "go")
    assert result.returncode == 4, result.stderr
    warning = "dsh: warning: budget: 80% of max-tool-calls 5 per run used (4)"
    assert result.stderr.splitlines().count(warning) == 1
    assert result.stderr.count('shout(text="hey")') == 6  # the sixth is denied:
    assert "Error: budget reached: max-tool-calls 5 per run: the run stops here" in result.stderr
    assert "budget reached: max-tool-calls 5 per run" in result.stderr


def test_bad_limits_are_usage_errors(tmp_path: Path) -> None:
    result = dsh(tmp_path, ["x"], "--max-steps", "0", "go")
    assert result.returncode == 2
    assert "--max-steps" in result.stderr


def test_max_cost_on_a_route_without_a_price_is_a_usage_error(tmp_path: Path) -> None:
    result = dsh(tmp_path, ["x"], "--max-cost", "0.01", "go")  # the scripted route: no price
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip() == (
        "dsh: --max-cost needs a price for scripted/scripted, which has none: add one to the "
        "`prices` of the usage row of a profile, or leave --max-cost out"
    )


def test_output_format_json_says_error_max_turns(tmp_path: Path) -> None:
    result = dsh(
        tmp_path, [SHOUT, SHOUT], "--yes", "--max-steps", "1", "--output-format", "json", "go"
    )
    assert result.returncode == 4, result.stderr
    out = json.loads(result.stdout)
    assert out["subtype"] == "error_max_turns" and out["is_error"] is True
    assert out["finish_reason"] == "aborted" and out["num_turns"] == 1


def test_a_day_limit_counts_every_stored_session_of_today(tmp_path: Path) -> None:
    layer = tmp_path / "day.yml"
    layer.write_text(yaml.safe_dump([{"id": "usage", "config": {"day_limits": {"max_steps": 3}}}]))
    first = dsh(tmp_path, [SHOUT, "Done."], "--yes", "--profile", str(layer), "go")
    assert first.returncode == 0, first.stderr  # two steps of three
    second = dsh(tmp_path, [SHOUT, SHOUT, "Done."], "--yes", "--profile", str(layer), "again")
    assert second.returncode == 4, second.stderr  # a new session: one step, then the day's
    assert "budget reached: max-steps 3 per day" in second.stderr
    assert second.stderr.count('shout(text="hey")') == 1
