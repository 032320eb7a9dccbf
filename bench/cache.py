"""Prompt-cache share: how much of each session's input a prefix-caching provider bills as hits.

Each scenario runs `dsh.Agent` (the built-in tools and plugins) against the loopback server
with its emulated prompt cache (`OpenAIServer(prefix_cache=True)`: the longest prefix shared
with any earlier request, in 64-token blocks of about four bytes a token). Printed per
scenario: requests, input tokens, cached tokens, their share, the ideal (every request's
cached prefix is the whole previous prompt of the same agent, in whole blocks; an agent is
known by its tool list) and the cached tokens as a share of that ideal. Target: >= 98 % of
the ideal where nothing is rewritten by design; pruning and compaction show their cost.

Each scenario's bill is priced as DeepSeek v4 flash (a cache miss $0.14, a hit $0.0028,
output $0.28 per million tokens), against the ideal's.

`--prefix` reports the prompt's weight instead: per profile, the fixed prefix every request
carries (system prompt and tool schemas, in tokens), its largest tool schemas, and how much
`read`'s decoration (path wrapper, line numbers, footer) adds to a source file's text.

Token counts are estimates (bytes / 4), so shares are comparable between scenarios and
commits, not with a provider's bill. `python bench/cache.py [--prefix] [scenario ...]`.
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import dsh
from dsh.plugins.ask_user import ask_user_question
from dsh.plugins.plan_mode import PLAN_MODE
from dsh.testing import OpenAIServer, RecordedRequest, reply, tool_call
from dsh.testing._prefix_cache import BLOCK_TOKENS

SUMMARY_MARK = "Summarise the conversation above"
TODO = {"todos": [{"content": "survey", "status": "in_progress", "activeForm": "Surveying"}]}
Step = Any  # a reply entry for the loopback server
Between = Callable[["Run"], Awaitable[None]]


def read(name: str = "notes.txt") -> Step:
    return reply(tool_call("read", {"file_path": name}))


@dataclass
class Scenario:
    name: str
    turns: list[list[Step]]
    """Per turn, the replies the model gives, in order (subagents' included)."""
    between: Between | None = None
    """Run before every turn after the first."""
    before: Between | None = None
    profile: list[dict[str, Any]] = field(default_factory=list)
    files: dict[str, str] = field(default_factory=dict)


@dataclass
class Run:
    agent: dsh.Agent[Any]
    cwd: Path
    session: str | None = None
    turn: int = 0


def responder(steps: Iterator[Step]) -> Callable[[RecordedRequest], Step]:
    """The next scripted reply, or a summary when the request asks for one."""

    def answer(record: RecordedRequest) -> Step:
        last = (record.body.get("messages") or [{}])[-1]
        if SUMMARY_MARK in str(last.get("content")):
            return "Summary: the notes were read; keep reading them."
        return next(steps, "done")

    return answer


async def play(scenario: Scenario) -> list[RecordedRequest]:
    with tempfile.TemporaryDirectory() as folder:
        cwd = Path(folder)
        for name, text in {"notes.txt": "hello\n" * 40, **scenario.files}.items():
            (cwd / name).parent.mkdir(parents=True, exist_ok=True)
            (cwd / name).write_text(text)
        steps = iter([step for turn in scenario.turns for step in turn])
        server = OpenAIServer([responder(steps)] * 1000, prefix_cache=True)
        async with server:
            agent = dsh.Agent(
                "openai:bench",
                base_url=server.base_url + "/v1",
                cwd=cwd,
                builtin_tools=True,
                approval=lambda request: dsh.Decision.once(),
                profile=scenario.profile,
            )
            run = Run(agent, cwd)
            async with agent:
                for turn in range(len(scenario.turns)):
                    hook = scenario.before if turn == 0 else scenario.between
                    if hook is not None:
                        await hook(run)
                    result = await agent.run(f"task {turn + 1}", session=run.session)
                    run.session, run.turn = result.session_id, turn + 1
        return server.requests


MISS, HIT, OUT = 0.14, 0.0028, 0.28
"""DeepSeek v4 flash, USD per million tokens."""


def bill(requests: list[RecordedRequest], cached: int) -> float:
    """USD for the requests with `cached` of their input tokens served from the cache."""
    total = sum(r.cache.prompt_tokens for r in requests if r.cache is not None)
    out = sum(64 for _ in requests)  # about what a scripted answer costs; equal for both
    return ((total - cached) * MISS + cached * HIT + out * OUT) / 1e6


def measure(requests: list[RecordedRequest]) -> tuple[int, int, int]:
    """(input, cached, ideal) tokens."""
    total = cached = ideal = 0
    previous: dict[bytes, int] = {}
    for record in requests:
        seen = record.cache
        if seen is None:
            continue
        agent = json.dumps(record.body.get("tools")).encode()
        total += seen.prompt_tokens
        cached += seen.cached_tokens
        before = min(previous.get(agent, 0), seen.prompt_tokens)
        ideal += before // BLOCK_TOKENS * BLOCK_TOKENS
        previous[agent] = seen.prompt_tokens
    return total, cached, ideal


# -- the scenarios -----------------------------------------------------------------------------


async def edit_instructions(run: Run) -> None:
    (run.cwd / "AGENTS.md").write_text(f"Rule {run.turn}: use tabs.\n" * (run.turn + 1))


async def add_skill(run: Run) -> None:
    skill = run.cwd / ".dsh" / "skills" / f"extra{run.turn}"
    skill.mkdir(parents=True)
    text = f"---\nname: extra{run.turn}\ndescription: Added in turn {run.turn}.\n---\nGo.\n"
    (skill / "SKILL.md").write_text(text)


async def plan_mode(run: Run) -> None:
    runtime = await run.agent._ensure_runtime()
    if run.session is None:  # a session to set the mode on: a first, empty exchange
        run.session = (await run.agent.run("hello")).session_id
    agent = await runtime.agent_for(run.session)
    runtime.ctx.require(PLAN_MODE).set(agent, True)


def skill_file() -> dict[str, str]:
    body = "---\nname: notes\ndescription: Read notes.\n---\nRead notes.txt first.\n"
    return {".dsh/skills/notes/SKILL.md": body}


BIG_READS = 30
BIG = {f"big{n}.txt": f"line {n}\n" * 1500 for n in range(BIG_READS)}
"""About 4.6k tokens a read: the window fills after about 11 of them."""
SMALL_WINDOW = [{"id": "compaction", "config": {"context_window": 64_000}}]


def scenarios() -> list[Scenario]:
    three = [[read(), read(), "answer"] for _ in range(3)]
    return [
        Scenario("50-step tool loop", [[*(read() for _ in range(50)), "answer"]]),
        Scenario("3 turns", three),
        Scenario(
            "todo_write",
            [
                [
                    reply(tool_call("todo_write", TODO)),
                    read(),
                    reply(tool_call("todo_write", TODO)),
                ],
                *three,
            ],
        ),
        Scenario(
            "skills (one loaded, one added)",
            [[reply(tool_call("skill", {"name": "notes"})), read(), "answer"], *three],
            between=add_skill,
            files=skill_file(),
        ),
        Scenario(
            "plan mode",
            [
                [read(), reply(tool_call("exit_plan_mode", {"plan": "Read."})), read(), "ok"],
                *three,
            ],
            before=plan_mode,
        ),
        Scenario(
            "AGENTS.md edited between turns",
            three,
            between=edit_instructions,
            files={"AGENTS.md": "Use tabs.\n"},
        ),
        Scenario(
            "subagents",
            [
                [
                    reply(tool_call("subagent", {"description": "read", "prompt": "Read."})),
                    read(),
                    "child answer",
                    "answer",
                ],
                *three,
            ],
        ),
        Scenario(
            "pruner",
            [[*(read(f"big{n}.txt") for n in range(BIG_READS)), "answer"]],
            profile=SMALL_WINDOW,
            files=BIG,
        ),
        Scenario(
            "compaction (no pruner)",
            [[*(read(f"big{n}.txt") for n in range(BIG_READS)), "answer"]],
            profile=[*SMALL_WINDOW, {"id": "pruner", "disabled": True}],
            files=BIG,
        ),
    ]


async def main(names: list[str]) -> None:
    if "--prefix" in names:
        await prefix_report()
        return
    print(
        f"{'scenario':34} {'reqs':>5} {'input':>9} {'cached':>9} {'share':>6} "
        f"{'ideal':>6} {'of ideal':>8} {'bill $':>8} {'ideal $':>8}"
    )
    for scenario in scenarios():
        if names and not any(n in scenario.name for n in names):
            continue
        requests = await play(scenario)
        total, cached, ideal = measure(requests)
        print(
            f"{scenario.name:34} {len(requests):5} {total:9,} {cached:9,} "
            f"{cached / total:6.1%} {ideal / total:6.1%} {cached / max(ideal, 1):8.1%} "
            f"{bill(requests, cached):8.4f} {bill(requests, ideal):8.4f}"
        )


# -- prompt weight -----------------------------------------------------------------------------

PROFILES = {
    "dsh.Agent (no coding tools)": {"builtin_tools": False},
    "default (coding tools: dsh run/batch)": {"builtin_tools": True},
}
SOURCE = Path(__file__).parents[1] / "src" / "dsh" / "loop" / "_request.py"
"""A typical source file for `read`'s decoration."""


def tokens(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()) // 4


async def first_request(options: dict[str, Any], script: list[Any]) -> list[RecordedRequest]:
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "source.py").write_text(SOURCE.read_text())
        async with OpenAIServer(script) as server:
            agent = dsh.Agent(
                "openai:bench", base_url=server.base_url + "/v1", cwd=folder, **options
            )
            async with agent:
                await agent.run("hi")
        return server.requests


async def prefix_report() -> None:
    print(f"{'profile':38} {'system':>7} {'tools':>6} {'schemas':>8} {'prefix':>7}")
    for name, options in PROFILES.items():
        [request] = await first_request(options, ["ok"])
        body = request.body
        system = tokens(body["messages"][0]["content"])
        tools = body.get("tools") or []
        schemas = sum(tokens(t) for t in tools)
        print(f"{name:38} {system:7,} {len(tools):6} {schemas:8,} {system + schemas:7,}")
        largest = sorted(tools, key=tokens, reverse=True)[:6]
        print("   largest: " + ", ".join(f"{t['function']['name']} {tokens(t)}" for t in largest))
    asks = ask_user_question
    function = {"name": asks.name, "description": asks.description, "parameters": asks.parameters}
    print(
        f"   + ask_user_question {tokens({'type': 'function', 'function': function})} where "
        "someone answers (dsh chat, web, ACP, a JSON-RPC client that answers)"
    )
    script = [reply(tool_call("read", {"file_path": "source.py"})), "ok"]
    requests = await first_request({"builtin_tools": True}, script)
    result = requests[1].body["messages"][-1]["content"]
    text = SOURCE.read_text()
    extra = len(result) - len(text)
    print(f"read decoration: {extra:,} characters on {len(text):,} ({extra / len(text):.1%})")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
