"""What a hook's exit code and output mean (Claude Code's definitions)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from dsh.plugins.hooks import HookOutcome, HookRun, decode


def run(
    code: int | None = 0, stdout: Any = "", stderr: str = "", failure: str | None = None
) -> HookRun:
    text = stdout if isinstance(stdout, str) else json.dumps(stdout)
    return HookRun(code, text, stderr, 5, failure)


@pytest.mark.parametrize(
    ("point", "given", "expected"),
    [
        ("UserPromptSubmit", run(stdout="use pnpm\n"), HookOutcome(context="use pnpm")),
        ("SessionStart", run(stdout="ctx"), HookOutcome(context="ctx")),
        ("PostToolUse", run(stdout="formatted"), HookOutcome(output="formatted")),
        ("PreToolUse", run(2, stderr="no\n"), HookOutcome("block", reason="no")),
        ("PreToolUse", run(2, stdout={"decision": "approve"}), HookOutcome("block")),
        ("PreCompact", run(2, stderr="meh"), HookOutcome(error="exit code 2: meh")),
        ("Stop", run(1, stderr="oops"), HookOutcome(error="exit code 1: oops")),
        (
            "Stop",
            run(None, failure="timed out after 1 s (killed)"),
            HookOutcome(error="timed out after 1 s (killed)"),
        ),
        ("PostToolUse", run(stdout="{not json"), HookOutcome(output="{not json")),
        (
            "Stop",
            run(stdout={"decision": "block", "reason": "tests first"}),
            HookOutcome("block", reason="tests first"),
        ),
        (
            "PreToolUse",
            run(stdout={"decision": "approve", "reason": "fine"}),
            HookOutcome("allow", reason="fine"),
        ),
        (
            "PostToolUse",
            run(stdout={"continue": False, "stopReason": "halt", "systemMessage": "hi"}),
            HookOutcome(stop=True, stop_reason="halt", output="hi"),
        ),
    ],
)
def test_exit_codes_and_output(point: Any, given: HookRun, expected: HookOutcome) -> None:
    assert decode(point, given) == expected


def test_hook_specific_output_counts_only_for_its_own_point() -> None:
    specific = {
        "hookEventName": "PreToolUse",
        "permissionDecision": "ask",
        "permissionDecisionReason": "check",
        "updatedInput": {"command": "ls"},
        "additionalContext": "note",
    }
    given = run(stdout={"decision": "block", "hookSpecificOutput": specific})
    assert decode("PreToolUse", given) == HookOutcome("ask", "check", "note", {"command": "ls"})
    assert decode("PostToolUse", given) == HookOutcome("block")  # another point's output
    assert (
        decode(
            "PostToolUse",
            run(stdout={"hookSpecificOutput": {**specific, "hookEventName": "PostToolUse"}}),
        ).updated_input
        is None
    )
