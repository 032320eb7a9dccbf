"""Session titles: the fallback from the first prompt, the model's title, the reference shape."""

from __future__ import annotations

import json
from typing import Any

from dsh.agent import AgentOptions, CreateAgentOptions, run_prompt
from dsh.plugins.session_title import (
    TITLE_PROVIDER,
    LlmTitlePlugin,
    SessionTitlePlugin,
    clean,
    fallback_title,
    title_of,
)
from dsh.session import SessionMeta, import_events
from dsh.testing import ScriptedModel, until
from tests.conftest import FIXTURES, Runtime

PROMPT = "Run two shell commands with the bash tool. tool=bash steps=2"


def reference(scenario: str) -> list[dict[str, Any]]:
    lines = (FIXTURES / "ts-logs" / scenario / "session.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines[1:]]


def test_the_fallback_is_the_first_five_words_as_the_reference_has_it() -> None:
    for scenario in ("bash2", "plain", "tools3", "resumed", "multi-turn"):
        events = reference(scenario)
        prompt = next(e for e in events if e["type"] == "user/message")
        title = next(e for e in events if e["type"] == "session/title")
        text = prompt["data"]["content"][0]["text"]
        assert fallback_title(text) == title["data"]["title"], scenario
    assert fallback_title("a\nb\x07c\td e f g") == "a b c d e"
    assert fallback_title("x" * 100, max_chars=10) == "xxxxxxxxx…"
    assert clean('"Fix the **login** bug."\nmore', 80) == "Fix the **login** bug"


async def test_the_first_prompt_titles_the_session_once(runtime: Runtime) -> None:
    await runtime.ctx.plugin(SessionTitlePlugin)
    runtime.model.add("one", "two")
    agent = await runtime.agent()
    await run_prompt(agent, PROMPT)
    await run_prompt(agent, "A second prompt that is not a title.")
    titles = [e for e in agent.session.events if e.type == "session/title"]
    prompt = next(e for e in agent.session.events if e.type == "user/message")
    shape = next(e for e in reference("bash2") if e["type"] == "session/title")
    assert [t.data for t in titles] == [{**shape["data"], "messageSeqs": [prompt.seq]}]
    assert list(titles[0].to_json()) == list(shape)  # the same envelope keys, in order
    assert title_of(agent.session.events) == "Run two shell commands with"


async def test_a_seeded_session_keeps_its_title(runtime: Runtime) -> None:
    await runtime.ctx.plugin(SessionTitlePlugin)
    runtime.model.add("again")
    seed = import_events(reference("plain"), "session-seeded")
    handle = await runtime.ctx.agents.create(
        CreateAgentOptions(
            "session-seeded",
            meta=SessionMeta(cwd="/tmp/dsh-conformance"),
            seed=seed,
            agent_options=AgentOptions(provider="scripted", model="scripted"),
        )
    )
    runtime.handles.append(handle)
    await run_prompt(handle.agent, "A new question for an old session.")
    titles = [e for e in handle.agent.session.events if e.type == "session/title"]
    assert len(titles) == 2  # the seed's two, no new one
    assert title_of(handle.agent.session.events) == "Fake title"


async def test_a_model_titles_the_session_after_the_fallback(runtime: Runtime) -> None:
    await runtime.ctx.plugin(SessionTitlePlugin)
    titler = ScriptedModel(['"Shell commands, twice."'])
    titler.install(runtime.ctx, provider="titler")
    await runtime.ctx.plugin(LlmTitlePlugin, {"provider": "titler", "model": "small"})
    runtime.model.add("done")
    agent = await runtime.agent()
    await run_prompt(agent, PROMPT)
    titled = await until(
        agent, lambda e: e.type == "session/title" and e.data["source"]["kind"] == "provider"
    )
    assert titled.data["title"] == "Shell commands, twice"
    assert titled.data["source"] == {
        "kind": "provider",
        "provider": TITLE_PROVIDER,
        "model": {"provider": "titler", "model": "small"},
    }
    kinds = [
        (e.type, e.data.get("source", {}).get("kind"))
        for e in agent.session.events
        if e.type.startswith("session/title")
    ]
    assert kinds == [
        ("session/title", "fallback"),
        ("session/title-llm-request", None),
        ("session/title", "provider"),
    ]
    record = next(e for e in agent.session.events if e.type == "session/title-llm-request")
    shape = next(e for e in reference("bash2") if e["type"] == "session/title-llm-request")
    assert list(record.data) == list(shape["data"])  # the reference's fields, in order
    request = titler.requests[0]
    assert request.purpose == "session-title" and request.max_tokens == 64
    assert PROMPT in request.messages[0].text
    titler.assert_complete()
