"""A large MCP catalog stays out of the prompt: `dsh run` against the loopback model server
with a 200-tool server (tests/plugins/mcp/many_tools.py); the recorded request bodies show
what the model got."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.plugins.mcp.support import stdio_server, write_mcp_json

from .support import run_cli as dsh
from .support import workspace
from .test_mcp import recording_model_server

SCRIPT = [
    {"parts": [{"tool_call": {"name": "tool_search", "arguments": {"query": "weather"}}}]},
    {
        "parts": [
            {
                "tool_call": {
                    "name": "mcp__many__weather_forecast",
                    "arguments": {"city": "Oslo", "days": 2},
                }
            }
        ]
    },
    {"parts": ["Sunny in Oslo."]},
]


@pytest.fixture
def model_server(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    with recording_model_server(tmp_path, SCRIPT) as served:
        yield served


def bodies(record: Path) -> list[dict[str, Any]]:
    return [json.loads(line)["body"] for line in record.read_text().splitlines()]


def test_a_large_catalog_is_searched_and_loaded_tools_are_appended(
    tmp_path: Path, model_server: tuple[str, Path]
) -> None:
    url, record = model_server
    ws = workspace(tmp_path)
    server = stdio_server(args=["-m", "tests.plugins.mcp.many_tools"], approval="allow")
    write_mcp_json(ws, {"many": server})
    env = {"DEEPSEEK_BASE_URL": url, "DEEPSEEK_API_KEY": "sk-test"}
    result = dsh(tmp_path, "run", "--cwd", str(ws), "--trust-workspace", "weather?", env=env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "Sunny in Oslo."
    first, second, third = bodies(record)
    names = [[t["function"]["name"] for t in body["tools"]] for body in (first, second, third)]
    assert "tool_search" in names[0]
    assert not any(name.startswith("mcp__") for name in names[0])
    loaded = ["mcp__many__weather_forecast", "mcp__many__weather_alerts"]
    assert sorted(names[1][len(names[0]) :]) == sorted(loaded)
    # The prefix holds: the tools sent before, unchanged, then the loaded ones.
    assert second["tools"][: len(first["tools"])] == first["tools"]
    assert second["messages"][: len(first["messages"])] == first["messages"]
    assert third["tools"] == second["tools"]
    assert "Oslo: sunny for 2 days" in json.dumps(third["messages"])
