"""`dsh run --output-format json|stream-json`: what a script written for Claude Code's headless
mode parses — one result object, or one message per line then the result — from a real `dsh`
process against the scripted model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from .test_run import dsh

SCRIPT: list[Any] = [
    {"tool": "shout", "args": {"text": "a"}, "usage": [600, 150, 9000]},
    {"text": "Done.", "usage": [400, 50, 0]},
]


def priced(tmp_path: Path) -> str:
    prices = tmp_path / "prices.yml"
    row = {"id": "usage", "config": {"prices": [{"route": "scripted/*", "input": 1.0,
                                                 "output": 2.0, "cache_read": 0.5}]}}  # fmt: skip
    prices.write_text(yaml.safe_dump([row]))
    return str(prices)


def test_json_prints_one_result_object(tmp_path: Path) -> None:
    result = dsh(tmp_path, SCRIPT, "--profile", priced(tmp_path), "--yes", "--output-format",
                 "json", "shout a")  # fmt: skip
    assert result.returncode == 0, result.stderr
    (line,) = result.stdout.splitlines()  # nothing else on stdout
    out = json.loads(line)
    assert out["type"] == "result" and out["subtype"] == "success"
    assert out["is_error"] is False and out["result"] == "Done."
    assert out["num_turns"] == 2  # model round trips
    assert out["session_id"] in result.stderr
    assert out["total_cost_usd"] == 0.0059
    assert out["usage"] == {
        "input_tokens": 1000,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 9000,
        "output_tokens": 200,
    }
    assert out["permission_denials"] == [] and out["duration_ms"] >= 0


def test_stream_json_prints_messages_then_the_result(tmp_path: Path) -> None:
    result = dsh(tmp_path, SCRIPT, "--yes", "--output-format", "stream-json", "shout a")
    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(o["type"], o.get("subtype")) for o in lines] == [
        ("system", "init"),
        ("assistant", None),
        ("user", None),
        ("assistant", None),
        ("result", "success"),
    ]
    init, call, tool_result, answer, end = lines
    session = init["session_id"]
    assert all(o["session_id"] == session for o in lines)
    assert "shout" in init["tools"] and init["permissionMode"] == "bypassPermissions"
    assert "ask_user_question" not in init["tools"]  # as the model is sent: nobody answers
    assert "skill" not in init["tools"]  # no skill in the workspace
    (use,) = call["message"]["content"]
    assert use["type"] == "tool_use" and use["name"] == "shout" and use["input"] == {"text": "a"}
    assert call["message"]["usage"]["cache_read_input_tokens"] == 9000
    (block,) = tool_result["message"]["content"]
    assert block["type"] == "tool_result" and block["tool_use_id"] == use["id"]
    assert block["is_error"] is False and "A" in block["content"]
    assert answer["message"]["content"] == [{"type": "text", "text": "Done."}]
    assert end["result"] == "Done." and end["total_cost_usd"] is None  # no price: no cost


def test_a_failed_run_is_an_error_result_and_keeps_its_exit_code(tmp_path: Path) -> None:
    script = [{"fail": "INVALID_CREDENTIAL", "message": "bad key"}]
    result = dsh(tmp_path, script, "--output-format", "json", "hello")
    assert result.returncode == 1
    out = json.loads(result.stdout)
    assert out["subtype"] == "error_during_execution" and out["is_error"] is True
    assert out["finish_reason"] == "error"


def test_denied_calls_are_listed(tmp_path: Path) -> None:
    script = [{"tool": "shout", "args": {"text": "hey"}}, "Denied."]
    result = dsh(tmp_path, script, "--output-format", "json", "shout hey")
    assert result.returncode == 3
    [denial] = json.loads(result.stdout)["permission_denials"]
    assert denial["tool_name"] == "shout" and denial["tool_input"] == {"text": "hey"}
    assert denial["tool_use_id"]  # Claude Code's three fields


def test_json_and_output_format_together_are_a_usage_error(tmp_path: Path) -> None:
    result = dsh(tmp_path, ["Hi."], "--json", "--output-format", "json", "hi")
    assert result.returncode == 2
    assert "--json and --output-format are two outputs: pick one" in result.stderr
    assert "Traceback" not in result.stderr
