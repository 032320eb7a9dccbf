"""Command hooks through the real loop: real shell scripts in a temporary workspace."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from dsh.agent import USER_CANCEL, run_prompt
from dsh.llm import GenerateOptions, ToolResultBlock, text_of
from dsh.loop import ReactLoopAgent
from dsh.plugins.approval import APPROVAL, ApprovalRequest
from dsh.plugins.compaction import COMPACTION, CompactionPlugin
from dsh.plugins.hooks import HOOKS
from dsh.testing import reply, tool_call
from dsh.workspace import SettingsError
from tests.tools.builtin.test_bash import fifo, killed, next_line, pid_in

from .conftest import Boot, World, command, script, settings

BASH = {"description": "run it"}


def bash(cmd: str) -> Any:
    return tool_call("bash", {"command": cmd, **BASH})


def last_result(options: GenerateOptions) -> str:
    """The text of the newest tool result in a request."""
    for message in reversed(options.messages):
        for block in message.content:
            if isinstance(block, ToolResultBlock):
                return text_of(block.content)
    return ""


def user_texts(options: GenerateOptions) -> list[str]:
    return [text_of(m.content) for m in options.messages if m.role == "user"]


def hook_events(agent: ReactLoopAgent) -> list[tuple[str, dict[str, Any]]]:
    return [(e.type, dict(e.data)) for e in agent.session.events if e.type.startswith("hook/")]


async def trusted(make_world: Boot, workspace: Path, hooks: Any, folder: str = ".dsh") -> World:
    """A world whose trusted workspace has `hooks` in `<folder>/settings.json`."""
    settings(workspace / folder / "settings.json", hooks)
    world = await make_world()
    world.trust()
    return world


def guard(workspace: Path) -> str:
    """A PreToolUse guard as Claude Code users write it: block `rm -rf` with exit 2."""
    script(
        workspace / ".claude" / "hooks" / "guard.sh",
        'input=$(cat)\nif printf "%s" "$input" | grep -q "rm -rf"; then\n'
        '  echo "rm -rf is not allowed in this project" >&2\n  exit 2\nfi\n',
    )
    return '"$CLAUDE_PROJECT_DIR"/.claude/hooks/guard.sh'


async def test_pre_tool_use_exit_2_blocks_and_the_model_sees_the_reason(
    make_world: Boot, workspace: Path
) -> None:
    hooks = {"PreToolUse": command("Bash", guard(workspace))}
    world = await trusted(make_world, workspace, hooks, ".claude")
    (workspace / "build").mkdir()
    world.model.add(
        reply(bash("rm -rf build")),
        reply(bash("ls")),
        reply("Left it alone.", expect=lambda o: "build" in last_result(o)),
    )
    agent = await world.agent()
    result = await run_prompt(agent, "clean up")
    assert result.finish_reason == "completed"
    assert (workspace / "build").is_dir()
    first = world.model.requests[1]
    assert last_result(first) == (
        "Error: blocked by a PreToolUse hook: rm -rf is not allowed in this project"
    )
    world.model.assert_complete()
    events = hook_events(agent)
    assert events[0] == (
        "hook/invoked",
        {
            "turn": 1,
            "point": "PreToolUse",
            "dialect": "claude-code",
            "handlerId": "claude-code:PreToolUse:1",
            "matcher": "Bash",
        },
    )
    kind, data = events[1]
    assert kind == "hook/result"
    assert data["decision"] == "block" and data["exitCode"] == 2
    assert data["stderrSummary"] == "rm -rf is not allowed in this project"
    assert isinstance(data["durationMs"], int)
    assert [(k, d.get("decision")) for k, d in events[2:]] == [
        ("hook/invoked", None),
        ("hook/result", "pass"),
    ]


async def test_hook_events_are_inside_the_open_turn(make_world: Boot, workspace: Path) -> None:
    world = await trusted(make_world, workspace, {"PreToolUse": command(None, "true")})
    world.model.add(reply(bash("echo hi")), reply("done"))
    agent = await world.agent()
    await run_prompt(agent, "go")
    types = [e.type for e in agent.session.events]
    start, end = types.index("turn/start"), types.index("turn/end")
    call, result = types.index("tool/call"), types.index("tool/result")
    hooks = [i for i, t in enumerate(types) if t.startswith("hook/")]
    assert len(hooks) == 2 and all(call < i < result for i in hooks) and start < call < end


async def test_json_ask_goes_to_the_approval_service(make_world: Boot, workspace: Path) -> None:
    answer = {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "ask",
            "permissionDecisionReason": "reading secrets needs a person",
        }
    }
    script(workspace / "ask.sh", f"cat >/dev/null\necho '{json.dumps(answer)}'\n")
    (workspace / "notes.txt").write_text("secret\n")
    world = await trusted(make_world, workspace, {"PreToolUse": command("Read", "./ask.sh")})
    asked: list[ApprovalRequest] = []

    async def person(request: ApprovalRequest) -> Any:
        asked.append(request)
        return "deny"

    world.ctx.require(APPROVAL).set_answerer(person)
    world.model.add(reply(tool_call("read", {"file_path": "notes.txt"})), reply("ok"))
    agent = await world.agent()
    await run_prompt(agent, "read the notes")
    assert [(r.tool, r.reason) for r in asked] == [("read", "reading secrets needs a person")]
    assert last_result(world.model.requests[1]) == 'Error: the user rejected tool "read"'
    decided = [dict(e.data) for e in agent.session.events if e.type == "approval/decided"]
    assert decided[0]["decision"] == "deny"
    assert ("hook/result", "ask") in [(k, d["decision"]) for k, d in hook_events(agent)[1:2]]


async def test_user_prompt_submit_adds_context_to_the_next_request(
    make_world: Boot, workspace: Path
) -> None:
    script(workspace / "ctx.sh", 'prompt=$(jq -r .prompt)\necho "Context for: $prompt"\n')
    world = await trusted(
        make_world, workspace, {"UserPromptSubmit": command(None, "./ctx.sh")}, ".claude"
    )
    world.model.add(reply("ok"))
    agent = await world.agent()
    await run_prompt(agent, "fix the bug")
    assert user_texts(world.model.requests[0]) == ["fix the bug", "Context for: fix the bug"]
    context = world.model.requests[0].messages[-1]
    assert context.source == {"kind": "plugin", "plugin": "hooks-claude-code"}


async def test_user_prompt_submit_exit_2_blocks_the_prompt(
    make_world: Boot, workspace: Path
) -> None:
    script(
        workspace / "no.sh",
        "cat >/dev/null\necho 'prompts about passwords are blocked' >&2\nexit 2\n",
    )
    world = await trusted(make_world, workspace, {"UserPromptSubmit": command(None, "./no.sh")})
    agent = await world.agent()
    result = await run_prompt(agent, "what is the root password?")
    assert result.finish_reason == "blocked"
    assert world.model.requests == []
    (_, result_data) = hook_events(agent)[1]
    assert result_data["decision"] == "block"
    assert result_data["stderrSummary"] == "prompts about passwords are blocked"


async def test_session_start_context_joins_the_first_prompt(
    make_world: Boot, workspace: Path
) -> None:
    script(workspace / "start.sh", 'source=$(jq -r .source)\necho "Session $source: use pnpm."\n')
    world = await trusted(make_world, workspace, {"SessionStart": command("startup", "./start.sh")})
    world.model.add(reply("ok"))
    agent = await world.agent()
    await run_prompt(agent, "install deps")
    assert user_texts(world.model.requests[0]) == ["install deps", "Session startup: use pnpm."]
    assert hook_events(agent) == []  # outside a turn: detached, not logged


async def test_stop_hook_makes_the_agent_continue_once(make_world: Boot, workspace: Path) -> None:
    script(
        workspace / "stop.sh",
        'if [ "$(jq -r .stop_hook_active)" = "false" ]; then\n'
        '  echo \'{"decision": "block", "reason": "Run the tests first."}\'\nfi\n',
    )
    world = await trusted(make_world, workspace, {"Stop": command(None, "./stop.sh")})
    world.model.add(
        reply("Done."),
        reply("Tests pass.", expect=lambda o: "Run the tests first." in user_texts(o)[-1]),
    )
    agent = await world.agent()
    result = await run_prompt(agent, "fix it")
    assert result.finish_reason == "completed" and result.text == "Tests pass."
    world.model.assert_complete()
    decisions = [d["decision"] for k, d in hook_events(agent) if k == "hook/result"]
    assert decisions == ["block", "pass"]


async def test_a_hook_that_times_out_is_killed_and_the_turn_goes_on(
    make_world: Boot, workspace: Path
) -> None:
    pid_file = workspace / "sleeper.pid"
    script(workspace / "slow.sh", f"sleep 60 &\necho $! > {pid_file}\nwait\n")
    # The group kill is only seen when the hook started its child before the timeout; on a
    # loaded machine that can take longer than a short one, so each try gives it four times
    # as long, until the child's pid was written first.
    for timeout in (0.5, 2, 8, 32):
        pid_file.unlink(missing_ok=True)
        hooks = {"PreToolUse": command("bash", "./slow.sh", timeout=timeout)}
        world = await trusted(make_world, workspace, hooks)
        world.model.add(reply(bash("echo ran")), reply("ok"))
        agent = await world.agent()
        result = await run_prompt(agent, "go")
        sleeper = pid_in(pid_file)
        if sleeper is not None:
            break
    assert sleeper is not None, "the hook never started its child before the timeout"
    assert result.finish_reason == "completed"
    assert last_result(world.model.requests[1]).strip() == "ran"
    await killed(sleeper)  # the hook's whole process group was killed
    (_, data) = hook_events(agent)[1]
    assert data["decision"] == "pass" and "exitCode" not in data
    assert data["stderrSummary"] == f"timed out after {timeout:g} s (killed)"


async def test_matching_hooks_run_in_parallel_and_deny_wins(
    make_world: Boot, workspace: Path
) -> None:
    # Each hook waits (bounded) for the other's mark: both marks are seen only in parallel.
    for me, other, decision in (("a", "b", "allow"), ("b", "a", "deny")):
        answer = {
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": decision,
                "permissionDecisionReason": f"hook {me} says {decision}",
            }
        }
        script(
            workspace / f"{me}.sh",
            f"cat >/dev/null\ntouch {me}.mark\n"
            f"for i in $(seq 100); do [ -e {other}.mark ] && break; sleep 0.05; done\n"
            f"[ -e {other}.mark ] && touch {me}.saw\necho '{json.dumps(answer)}'\n",
        )
    hooks = {"PreToolUse": [*command("bash", "./a.sh"), *command("Bash|Edit", "./b.sh")]}
    world = await trusted(make_world, workspace, hooks)
    world.model.add(reply(bash("echo hi")), reply("ok"))
    agent = await world.agent()
    await run_prompt(agent, "go")
    assert (workspace / "a.saw").exists() and (workspace / "b.saw").exists()
    assert last_result(world.model.requests[1]) == (
        "Error: blocked by a PreToolUse hook: hook b says deny"
    )


async def test_updated_input_replaces_the_arguments(make_world: Boot, workspace: Path) -> None:
    answer = {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "allow",
            "updatedInput": {"command": "echo rewritten", "description": "safer"},
        }
    }
    script(workspace / "rewrite.sh", f"cat >/dev/null\necho '{json.dumps(answer)}'\n")
    world = await trusted(make_world, workspace, {"PreToolUse": command("Bash", "./rewrite.sh")})
    world.model.add(reply(bash("echo original")), reply("ok"))
    agent = await world.agent()
    await run_prompt(agent, "go")
    assert last_result(world.model.requests[1]).strip() == "rewritten"
    call = next(e for e in agent.session.events if e.type == "tool/call")
    assert "echo original" in call.data["arguments"]  # the log keeps what the model sent


async def test_post_tool_use_formats_and_feeds_back(make_world: Boot, workspace: Path) -> None:
    script(
        workspace / "fmt.sh",
        'file=$(jq -r .tool_input.file_path)\ntr a-z A-Z < "$file" > "$file.tmp" && '
        'mv "$file.tmp" "$file"\necho "formatted $file"\n',
    )
    script(workspace / "lint.sh", "cat >/dev/null\necho 'lint: line 1 is shouting' >&2\nexit 2\n")
    hooks = {"PostToolUse": [*command("Write|Edit", "./fmt.sh"), *command("Write", "./lint.sh")]}
    world = await trusted(make_world, workspace, hooks, ".claude")
    world.model.add(
        reply(tool_call("write", {"file_path": "a.txt", "content": "hello\n"})),
        reply("ok"),
    )
    agent = await world.agent()
    await run_prompt(agent, "write a file")
    assert (workspace / "a.txt").read_text() == "HELLO\n"
    seen = last_result(world.model.requests[1])
    assert seen.endswith("PostToolUse hook feedback:\nlint: line 1 is shouting")
    outputs = [d.get("output") for k, d in hook_events(agent) if k == "hook/result"]
    assert "formatted a.txt" in outputs


async def test_an_untrusted_workspace_runs_no_hook_but_user_hooks_run(
    make_world: Boot, workspace: Path
) -> None:
    settings(
        workspace / ".claude" / "settings.json",
        {"PreToolUse": command(None, "touch cloned-hook-ran")},
    )
    user_settings = Path(os.environ["DSH_HOME"]) / "settings.json"
    settings(user_settings, {"PreToolUse": command(None, "touch user-hook-ran")})
    world = await make_world()
    world.model.add(reply(bash("echo hi")), reply("ok"))
    agent = await world.agent()
    await run_prompt(agent, "go")
    assert not (workspace / "cloned-hook-ran").exists()
    assert (workspace / "user-hook-ran").exists()
    assert [d["handlerId"] for k, d in hook_events(agent) if k == "hook/invoked"] == [
        "claude-code:PreToolUse:1"
    ]


async def test_trust_workspace_config_runs_workspace_hooks(
    make_world: Boot, workspace: Path
) -> None:
    settings(workspace / ".claude" / "settings.json", {"PreToolUse": command(None, "touch ran")})
    world = await make_world({"trust_workspace": True})
    world.model.add(reply(bash("echo hi")), reply("ok"))
    await run_prompt(await world.agent(), "go")
    assert (workspace / "ran").exists()


async def test_profile_row_hooks_always_run(make_world: Boot, workspace: Path) -> None:
    world = await make_world({"hooks": {"Stop": command(None, "touch stopped")}})
    world.model.add(reply("hi"))
    await run_prompt(await world.agent(), "go")
    assert (workspace / "stopped").exists()


async def test_continue_false_ends_the_turn(make_world: Boot, workspace: Path) -> None:
    answer = {"continue": False, "stopReason": "the build is broken; stop here"}
    script(workspace / "halt.sh", f"cat >/dev/null\necho '{json.dumps(answer)}'\n")
    world = await trusted(make_world, workspace, {"PostToolUse": command(None, "./halt.sh")})
    world.model.add(reply(bash("echo hi")))
    agent = await world.agent()
    result = await run_prompt(agent, "go")
    assert result.reason == {
        "kind": "aborted",
        "reason": {"kind": "hook", "reason": "the build is broken; stop here"},
    }
    world.model.assert_complete()


async def test_cancel_kills_a_running_hook(make_world: Boot, workspace: Path) -> None:
    pid_file = workspace / "hang.pid"
    script(workspace / "hang.sh", f"sleep 60 &\necho $! > {pid_file}\nwait\n")
    world = await trusted(make_world, workspace, {"PreToolUse": command(None, "./hang.sh")})
    world.model.add(reply(bash("echo hi")))
    agent = await world.agent()
    async with fifo(pid_file) as pids:
        agent.followup("go")
        sleeper = int(await next_line(pids))  # the hook runs: its child started
    agent.cancel(USER_CANCEL)
    await agent.when_idle()
    assert [e.data["reason"]["kind"] for e in agent.session.events if e.type == "turn/end"] == [
        "aborted"
    ]
    await killed(sleeper)
    (_, data) = hook_events(agent)[1]
    assert data["stderrSummary"] == "cancelled (killed)"


async def test_detached_points_run_notification_session_end_and_pre_compact(
    make_world: Boot, workspace: Path
) -> None:
    log = workspace / "points.log"
    record = (
        f"jq -c '{{e: .hook_event_name, n: .notification_type, t: .trigger, r: .reason}}' >> {log}"
    )
    hooks = {point: command(None, record) for point in ("Notification", "SessionEnd", "PreCompact")}
    world = await make_world({"hooks": hooks, "idle_notification_s": 0}, policy=[])
    await world.ctx.plugin(CompactionPlugin)

    async def person(request: ApprovalRequest) -> Any:
        return "once"

    world.ctx.require(APPROVAL).set_answerer(person)
    world.model.add(reply(bash("echo hi")), reply("ok " * 50))
    world.model.add(lambda o: reply("SUMMARY"))
    agent = await world.agent()
    await run_prompt(agent, "go " * 50)
    await world.ctx.require(COMPACTION).compact_now(agent)
    for handle in world.handles:
        await handle.dispose()
    world.handles.clear()
    await world.ctx.require(HOOKS).settled()
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    kinds = {(x["e"], x["n"] or x["t"] or x["r"]) for x in lines}
    assert ("Notification", "permission_prompt") in kinds
    assert ("PreCompact", "manual") in kinds
    assert ("SessionEnd", "other") in kinds


async def test_a_bad_settings_file_vetoes_the_agent_with_one_line(
    make_world: Boot, workspace: Path
) -> None:
    bad = settings(
        workspace / ".dsh" / "settings.json", {"PreToolUse": [{"matcher": "(", "hooks": []}]}
    )
    world = await make_world()
    world.trust()
    with pytest.raises(SettingsError) as caught:
        await world.agent()
    assert str(caught.value) == (
        f"{bad}: hooks.PreToolUse[0].matcher: '(' is not a valid regular expression "
        "(missing ), unterminated subpattern at position 0)"
    )


async def test_tool_hook_contexts_follow_the_result(make_world: Boot, workspace: Path) -> None:
    def say(point: str, text: str) -> str:
        answer = {"hookSpecificOutput": {"hookEventName": point, "additionalContext": text}}
        return f"cat >/dev/null; echo '{json.dumps(answer)}'"

    hooks = {
        "PreToolUse": command("Bash", say("PreToolUse", "before: mind the cwd")),
        "PostToolUse": command("Bash", say("PostToolUse", "after: output was checked")),
    }
    world = await trusted(make_world, workspace, hooks)
    world.model.add(reply(bash("echo hi")), reply("ok"))
    await run_prompt(await world.agent(), "go")
    texts = user_texts(world.model.requests[1])
    assert texts[-2:] == ["before: mind the cwd", "after: output was checked"]


async def test_subagent_stop_keeps_a_child_going_and_stop_is_for_the_parent(
    make_world: Boot, workspace: Path
) -> None:
    script(
        workspace / "stop.sh",
        'input=$(cat)\nactive=$(jq -r .stop_hook_active <<<"$input")\n'
        'echo "$(jq -r .hook_event_name <<<"$input") $active" >> stops.log\n'
        'if [ "$active" = "false" ]; then\n'
        '  echo \'{"decision": "block", "reason": "check your answer"}\'\nfi\n',
    )
    hooks = {"SubagentStop": command(None, "./stop.sh"), "Stop": command(None, "./stop.sh")}
    world = await trusted(make_world, workspace, hooks)
    from dsh.plugins.subagents import SubagentsPlugin

    await world.ctx.plugin(SubagentsPlugin)
    world.model.add(
        reply(tool_call("subagent", {"description": "compute", "prompt": "What is 6*7?"})),
        reply("41"),  # the child
        reply("42", expect=lambda o: "check your answer" in user_texts(o)[-1]),  # the child again
        reply("The child says 42."),  # the parent
        reply("Checked: 42."),  # the parent again, after its own Stop hook
    )
    result = await run_prompt(await world.agent(), "ask a child")
    assert result.text == "Checked: 42."
    assert last_result(world.model.requests[3]) == "42"
    assert (workspace / "stops.log").read_text().splitlines() == [
        "SubagentStop false",
        "SubagentStop true",
        "Stop false",
        "Stop true",
    ]


async def test_a_lone_surrogate_in_the_payload_reaches_the_hook_as_an_escape(
    workspace: Path,
) -> None:
    from dsh.kernel import CancelSignal
    from dsh.plugins.hooks._runner import run_hook

    payload = {"tool_input": {"file_path": "bad\udcffname.txt"}}
    run = await run_hook(
        "cat", payload, workspace=workspace, signal=CancelSignal(), timeout_s=30, max_bytes=4096
    )
    assert run.exit_code == 0, run.failure
    assert json.loads(run.stdout) == payload
