"""The agent loop's config: plain data checked into `LoopConfig` and its `ConfigAgent`s."""

from __future__ import annotations

import pytest

from dsh.kernel import ConfigError, load_config
from dsh.loop import ConfigAgent, LoopConfig


def test_config_agents_are_checked_and_built() -> None:
    assert load_config(LoopConfig, {}) == LoopConfig() and LoopConfig().agents == []
    config = load_config(
        LoopConfig,
        {"max_parallel_tool_calls": "4", "agents": [{"id": "a", "max_tokens": "100"}]},
    )
    assert config.max_parallel_tool_calls == 4
    assert config.agents == [ConfigAgent(id="a", max_tokens=100)]


def test_bad_values_are_named_by_their_keys() -> None:
    data = {"max_parallel_tool_calls": 0, "agents": [{"max_tokens": 0, "modle": "m"}]}
    with pytest.raises(ConfigError) as info:
        load_config(LoopConfig, data)
    lines = info.value.lines().split("; ")
    assert lines[:3] == [
        "config.max_parallel_tool_calls: must be >= 1, got 0",
        "config.agents[0].max_tokens: must be > 0, got 0",
        "config.agents[0].modle: unknown key (known keys: id, session_id, resume_session_id,"
        " provider, model, max_tokens, reasoning_effort, cwd, system_prompt)",
    ]
    assert lines[3:] == ["config.agents[0].id: required, not given"]
