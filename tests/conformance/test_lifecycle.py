"""SPEC §5.10: creation, publication order, setup rollback, disposal, many agents."""

import asyncio
from typing import Any

import pytest

from dsh import Context
from dsh.agent import (
    AGENT_CREATED,
    AGENT_DISPOSED,
    AGENT_SESSION_START,
    AGENT_STATUS,
    AgentLlmTarget,
    AgentOptions,
    CreateAgentOptions,
    install_agent_llm_target,
    run_prompt,
)
from dsh.kernel import CancelSignal, Owner
from dsh.session import SESSION_CREATED, SESSION_DISPOSED, SessionMeta
from dsh.testing import reply, tool_call, until, wait_all_tasks_blocked
from dsh.tools import tool
from tests.conftest import Runtime, turn_end


def options(session_id: str, **kw: Any) -> CreateAgentOptions:
    return CreateAgentOptions(
        session_id=session_id,
        meta=SessionMeta(cwd="/tmp"),
        agent_options=AgentOptions(provider="scripted", model="scripted"),
        **kw,
    )


async def test_publication_and_teardown_order(runtime: Runtime) -> None:
    order: list[str] = []
    ctx = runtime.ctx
    ctx.on(SESSION_CREATED, lambda s: order.append("session/created"))
    ctx.on(AGENT_CREATED, lambda e: order.append("agent/created"))
    ctx.on(AGENT_SESSION_START, lambda e: order.append(f"session-start:{e.source}"))
    ctx.on(AGENT_STATUS, lambda e: order.append(f"status:{e.status}"))
    ctx.on(AGENT_DISPOSED, lambda e: order.append("agent/disposed"))
    ctx.on(SESSION_DISPOSED, lambda s: order.append("session/disposed"))
    runtime.model.add(reply("hi"))
    handle = await ctx.agents.create(options("life-1"))
    assert ctx.agents.get("life-1") is handle.agent
    await run_prompt(handle.agent, "hello")
    await handle.dispose()
    await handle.dispose()  # memoized
    assert order == [
        "session/created",
        "agent/created",
        "session-start:startup",
        "status:running",
        "status:idle",
        "agent/disposed",
        "session/disposed",
    ]
    assert ctx.agents.get("life-1") is None
    assert ctx.sessions.get("life-1") is None


async def test_dispose_during_a_turn_aborts_it_and_waits(runtime: Runtime) -> None:
    runtime.model.add(reply("thinking", hang=True))
    handle = await runtime.ctx.agents.create(options("life-2"))
    agent = handle.agent
    agent.followup("go")
    agent.followup("pending")
    await until(agent, "assistant/chunk")
    await handle.dispose()
    assert turn_end(agent) == {"kind": "aborted", "reason": {"kind": "disposed"}}  # type: ignore[arg-type]
    assert not agent.inbox.has_pending  # type: ignore[attr-defined]
    with pytest.raises(RuntimeError, match="disposed"):
        agent.followup("too late")


async def test_setup_composes_a_scoped_world_and_failure_rolls_back(runtime: Runtime) -> None:
    @tool
    def secret() -> str:
        """Only this agent has it."""
        return "42"

    def setup(agent_ctx: Context) -> None:
        agent_ctx.tools.register(secret)
        agent_ctx.system_prompt.section("persona:extra", 10, "You like numbers.")

    runtime.model.add(reply(tool_call("secret")), reply("42!"), reply("plain"))
    special = await runtime.ctx.agents.create(options("life-3", setup=setup))
    plain = await runtime.agent()
    await run_prompt(special.agent, "secret?")
    await run_prompt(plain, "anything")
    assert [t.name for t in runtime.model.requests[0].tools] == ["secret"]
    assert "You like numbers." in (runtime.model.requests[0].system or "")
    assert runtime.model.requests[2].tools == ()
    assert "You like numbers." not in (runtime.model.requests[2].system or "")
    await special.dispose()

    created: list[str] = []
    runtime.ctx.on(SESSION_CREATED, lambda s: created.append(s.id))

    async def failing(agent_ctx: Context) -> None:
        agent_ctx.tools.register(secret)
        raise ValueError("setup broke")

    with pytest.raises(ValueError, match="setup broke"):
        await runtime.ctx.agents.create(options("life-4", setup=failing))
    assert runtime.ctx.agents.get("life-4") is None
    assert runtime.ctx.sessions.get("life-4") is None
    assert created == []
    assert runtime.ctx.tools.get("secret") is None


async def test_setup_returns_none_or_an_object_with_commit(runtime: Runtime) -> None:
    @tool
    def secret() -> str:
        """Only this agent has it."""
        return "42"

    runtime.model.add(reply("a"), reply("b"), reply("c"))
    # The README's one-liner: `register()` returns a Disposer, which is no commit.
    first = await runtime.ctx.agents.create(
        options("life-setup-1", setup=lambda agent_ctx: agent_ctx.tools.register(secret))
    )
    await run_prompt(first.agent, "tools?")
    assert [t.name for t in runtime.model.requests[-1].tools] == ["secret"]
    # A helper returning its disposers (a list) is no commit either.
    target = AgentLlmTarget("scripted", "scripted-small")
    second = await runtime.ctx.agents.create(
        options("life-setup-2", setup=lambda c: install_agent_llm_target(c, target))
    )
    await run_prompt(second.agent, "route?")
    assert runtime.model.requests[-1].model == "scripted-small"

    order: list[str] = []

    class Transaction:
        def commit(self) -> None:
            order.append("commit")

    runtime.ctx.on(AGENT_CREATED, lambda e: order.append("agent/created"))
    third = await runtime.ctx.agents.create(options("life-setup-3", setup=lambda c: Transaction()))
    assert order == ["commit", "agent/created"]
    for handle in (first, second, third):
        await handle.dispose()


async def test_creation_signal_and_veto_roll_back(runtime: Runtime) -> None:
    signal = CancelSignal()

    async def slow_setup(agent_ctx: Context) -> None:
        await asyncio.Event().wait()  # never finishes by itself

    task = asyncio.create_task(
        runtime.ctx.agents.create(options("life-5", signal=signal, setup=slow_setup))
    )
    await wait_all_tasks_blocked()  # setup is running
    signal.abort("stop")
    with pytest.raises(Exception, match="stop"):
        await task
    assert runtime.ctx.agents.get("life-5") is None

    disposed: list[str] = []
    runtime.ctx.on(AGENT_DISPOSED, lambda e: disposed.append(e.agent.id))

    def veto(event: Any) -> None:
        raise PermissionError("not this one")

    remove = runtime.ctx.on(AGENT_CREATED, veto)
    with pytest.raises(PermissionError):
        await runtime.ctx.agents.create(options("life-6"))
    remove()
    assert runtime.ctx.agents.get("life-6") is None
    assert runtime.ctx.sessions.get("life-6") is None
    assert disposed == ["life-6"]  # every delivered creation edge is paired


async def test_owner_disposal_disposes_its_agents(runtime: Runtime) -> None:
    plugin_ctx = runtime.ctx.child("some-plugin")
    handle = await plugin_ctx.agents.create(options("life-7"))
    assert runtime.ctx.agents.get("life-7") is handle.agent
    await plugin_ctx.owner.dispose()
    assert runtime.ctx.agents.get("life-7") is None
    assert isinstance(plugin_ctx.owner, Owner)


async def test_agent_owned_by_the_agent_whose_scope_created_it(runtime: Runtime) -> None:
    parent = await runtime.agent()
    child = await parent.ctx.agents.create(options("life-8"))
    assert runtime.ctx.agents.is_owned_by("life-8", parent)
    assert child.agent not in runtime.ctx.agents.roots()
    assert parent in runtime.ctx.agents.roots()
    await child.dispose()


async def test_llm_target_switches_variables_and_routing(runtime: Runtime) -> None:
    agent = await runtime.agent(system_prompt="You run on {{model}} via {{provider}}.")
    target = AgentLlmTarget("scripted", "scripted-small")
    install_agent_llm_target(agent.ctx, target)
    runtime.model.add(reply("a"), reply("b"))
    await run_prompt(agent, "one")
    target.model = "scripted-large"
    await run_prompt(agent, "two")
    first, second = runtime.model.requests
    assert first.model == "scripted-small" and "scripted-small via scripted" in (first.system or "")
    assert second.model == "scripted-large" and "scripted-large" in (second.system or "")
    changes = [e.data["reason"] for e in agent.session.events if e.type == "request/header"]
    assert changes == ["initial", "change"]


async def test_hundred_agents_run_turns_concurrently(runtime: Runtime) -> None:
    runtime.model.add(*[reply(tool_call("noop"), delay=0.001) for _ in range(100)])
    runtime.model.add(*["done"] * 100)

    @tool(concurrency_safe=True)
    async def noop() -> str:
        """Do nothing but let the other agents run."""
        await asyncio.sleep(0)
        return "ok"

    runtime.ctx.tools.register(noop)
    agents = [await runtime.agent() for _ in range(100)]
    results = await asyncio.gather(*(run_prompt(a, f"task {i}") for i, a in enumerate(agents)))
    assert all(r.finish_reason == "completed" for r in results)
    assert all(r.text == "done" for r in results)
    assert len(runtime.model.requests) == 200


async def test_owner_disposed_during_setup_rolls_creation_back(runtime: Runtime) -> None:
    plugin_ctx = runtime.ctx.child("short-lived")
    entered = asyncio.Event()

    async def slow_setup(agent_ctx: Context) -> None:
        entered.set()
        await asyncio.Event().wait()

    created: list[str] = []
    runtime.ctx.on(AGENT_CREATED, lambda e: created.append(e.agent.id))
    task = asyncio.create_task(plugin_ctx.agents.create(options("life-9", setup=slow_setup)))
    await entered.wait()
    await plugin_ctx.owner.dispose()
    with pytest.raises(Exception, match="owner was disposed"):
        await task
    assert created == []
    assert runtime.ctx.agents.get("life-9") is None
    assert runtime.ctx.sessions.get("life-9") is None


async def test_config_agents_start_with_the_plugin() -> None:
    from dsh.loop import CONFIG_START_FAILED, ConfigStartFailed
    from dsh.profiles import CORE_ROWS, boot, load_profile
    from dsh.testing import ScriptedModel

    agents = [
        {
            "id": "helper",
            "provider": "scripted",
            "model": "scripted",
            "cwd": "/srv/project",
            "system_prompt": "You run {{model}} in {{cwd}}.",
        },
        {"id": "ghost", "resume_session_id": "session-that-does-not-exist"},
    ]
    failures: list[ConfigStartFailed] = []
    root = Context()
    root.on(CONFIG_START_FAILED, failures.append)
    rows = [
        *CORE_ROWS[:-1],
        {"id": "agent-loop", "name": "agent_loop", "config": {"agents": agents}},
    ]
    ctx = await boot(load_profile(base=rows), root=root)
    model = ScriptedModel(["hi"])
    model.install(ctx)
    [helper] = ctx.agents.list()
    assert helper.id.startswith("helper-session-")
    await run_prompt(helper, "hello")
    assert "You run scripted in /srv/project." in (model.requests[0].system or "")
    assert [f.session_id for f in failures] == ["session-that-does-not-exist"]
    assert "no session persistence" in str(failures[0].error)
    await ctx.owner.dispose()


async def test_a_disposed_agent_is_not_kept_alive_by_its_owner(runtime: Runtime) -> None:
    import gc
    import weakref

    plugin_ctx = runtime.ctx.child("long-lived")
    before = len(plugin_ctx.owner._effects)
    handle = await plugin_ctx.agents.create(options("life-10"))
    ref = weakref.ref(handle.agent)
    await handle.dispose()
    assert len(plugin_ctx.owner._effects) == before
    del handle
    gc.collect()
    assert ref() is None
