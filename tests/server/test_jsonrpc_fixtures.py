"""Interchange with the reference runtime: our wire sequence against its recorded transcripts.

The recordings (tests/fixtures/jsonrpc-checkout/) drove the reference runtime with its own
SDK against a scripted model. We replay the same scenarios against our runtime and compare the
order of responses and notifications (event types, collapsed runs of chunks), leaving out the
`session/title` side events, whose place in the log is not part of the protocol, and our
`sandbox/mode` record at creation, which the reference's SDK composition of that release did
not log (its 0.2.1 release does, as we do).
"""

from __future__ import annotations

import json
import os
from itertools import groupby
from pathlib import Path
from typing import Any

import pytest

from dsh.client import AsyncHarness
from dsh.persistence import project_dir_name
from dsh.testing import OpenAIServer, reply, tool_call
from tests.conftest import FIXTURES

ROOT = Path(__file__).parents[2]
CHECKOUT = FIXTURES / "jsonrpc-checkout"
BASH = {"command": "cat hello.txt", "description": "Read hello.txt"}


def shape(frames: list[dict[str, Any]]) -> list[str]:
    """What happens on the wire, in order: requests, responses, notification kinds."""
    out: list[str] = []
    for frame in frames:
        if "method" in frame and "id" in frame:
            out.append(f"request {frame['method']}")
        elif "id" in frame:
            out.append("response")
        elif frame["method"] == "session.event":
            kind = frame["params"]["event"]["type"]
            if kind.startswith(("session/title", "rewind/")) or kind == "sandbox/mode":
                continue  # dsh's own events: titles, the sandbox, workspace checkpoints
            out.append(f"event {kind}")
        elif frame["method"] != "tool.progress":  # dsh's own (asked for by dsh.client)
            out.append(f"{frame['method']} {frame['params'].get('status', '')}".strip())
    return [key for key, _ in groupby(out)]


def collapse(kinds: list[str]) -> list[str]:
    return [key for key, _ in groupby(kinds)]


def reference(scenario: str) -> list[str]:
    lines = (CHECKOUT / scenario / "transcript.jsonl").read_text().splitlines()
    return shape([json.loads(line)["message"] for line in lines])


SCENARIOS = {
    "no-tool": [["Answer: nothing to do."]],
    "two-tools": [
        [reply(tool_call("bash", BASH)), reply(tool_call("bash", BASH)), "Done after 2 tool calls."]
    ],
    "two-prompts": [[reply(tool_call("bash", BASH)), "First answer."], ["Second answer."]],
}


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
async def test_the_wire_sequence_matches_the_reference(tmp_path: Path, scenario: str) -> None:
    (tmp_path / "hello.txt").write_text("hello\nfrom the\nbenchmark\n")
    prompts = [
        json.loads(line)["message"]["params"]["contentBlocks"][0]["text"]
        for line in (CHECKOUT / scenario / "transcript.jsonl").read_text().splitlines()
        if json.loads(line)["message"].get("method") == "session/prompt"
    ]
    runs = SCENARIOS[scenario]
    assert len(prompts) == len(runs)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DEEPSEEK_", "DSH_"))}
    frames: list[dict[str, Any]] = []
    async with OpenAIServer([entry for run in runs for entry in run]) as server:
        env |= {
            "DEEPSEEK_BASE_URL": server.base_url,
            "DEEPSEEK_API_KEY": "sk-fake",
            "DSH_SESSION_ROOT": str(tmp_path / "sessions"),
            "HOME": str(tmp_path),
            "PYTHONPATH": str(ROOT),
        }
        harness = AsyncHarness(
            provider="deepseek-official", model="fake-model", cwd=str(tmp_path), env=env
        )
        harness.trace = frames  # every frame, in the order it crossed the wire
        await harness.start()
        for prompt in prompts:
            await harness.run(prompt, session_id="session-fixture")
        await harness.close()
    assert shape(frames) == reference(scenario)
    # The session log on disk has the reference's shape too (header line first).
    [log] = (tmp_path / "sessions").rglob("session.jsonl")
    assert log.parent.parent.name == project_dir_name(str(tmp_path))
    ours = [json.loads(line)["type"] for line in log.read_text().splitlines()]
    [types] = (CHECKOUT / scenario).glob("types.*.json")
    theirs = json.loads(types.read_text())["types"]
    ours = [t for t in ours if t != "sandbox/mode" and not t.startswith("rewind/")]
    assert collapse(untitled(ours)) == collapse(untitled(theirs))


def untitled(kinds: list[str]) -> list[str]:
    return [kind for kind in kinds if not kind.startswith("session/title")]
