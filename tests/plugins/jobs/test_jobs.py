import asyncio
from typing import Any

from dsh.agent import Agent, run_prompt
from dsh.kernel import CancelSignal
from dsh.llm import GenerateOptions
from dsh.loop import ReactLoopAgent
from dsh.plugins.jobs import JOBS, Job, JobError, JobService, JobsPlugin
from dsh.plugins.subagents import SubagentsPlugin
from dsh.testing import reply, tool_call, wait_all_tasks_blocked
from dsh.tools import ToolExecutionInput, ToolResult, ToolRunContext, tool
from tests.conftest import Runtime


async def mount(rt: Runtime, **config: Any) -> JobService:
    """The jobs plugin with its tools offered, as by a plugin that starts jobs."""
    await rt.ctx.plugin(JobsPlugin, config, id="jobs")
    jobs = rt.ctx.require(JOBS)
    assert await jobs.offer_tools()
    return jobs


async def test_job_tools_come_with_the_first_plugin_that_starts_jobs(runtime: Runtime) -> None:
    await runtime.ctx.plugin(JobsPlugin, {}, id="jobs")
    jobs = runtime.ctx.require(JOBS)
    assert runtime.ctx.tools.get("job_output") is None  # nothing can start a job yet
    assert await jobs.offer_tools() and await jobs.offer_tools()  # mounted once
    names = [t.name for t in runtime.ctx.tools.schemas()]
    assert [n for n in names if n.startswith("job_")] == ["job_kill", "job_list", "job_output"]


async def test_job_tools_at_once(runtime: Runtime) -> None:
    await runtime.ctx.plugin(JobsPlugin, {"tools": True}, id="jobs")
    assert runtime.ctx.tools.get("job_output") is not None


async def test_job_tools_turned_off_are_never_offered(runtime: Runtime) -> None:
    await runtime.ctx.plugin(JobsPlugin, {"tools": False}, id="jobs")
    assert not await runtime.ctx.require(JOBS).offer_tools()
    assert runtime.ctx.tools.get("job_output") is None


def gated(gate: asyncio.Event, output: str = "done") -> Any:
    async def body(signal: CancelSignal) -> str:
        await gate.wait()
        return output

    return body


async def until_signal(signal: CancelSignal) -> str:
    await signal.wait()
    return "stopped"


async def call(rt: Runtime, agent: Agent | None, name: str, args: Any) -> ToolResult:
    return await rt.ctx.tools.execute(ToolExecutionInput("c", name, args, CancelSignal(), agent))


def text(result: ToolResult) -> str:
    return result.content[0].text  # type: ignore[union-attr]


def request_texts(options: GenerateOptions) -> list[str]:
    return [m.text for m in options.messages]


async def test_job_output_list_and_renderings(runtime: Runtime) -> None:
    jobs = await mount(runtime)
    agent = await runtime.agent()
    assert text(await call(runtime, agent, "job_list", {})) == "(no background jobs)"
    gate = asyncio.Event()
    job = jobs.start(agent, "test", "a label", gated(gate, "all done"))
    assert job.id == "test-1"
    running = await call(runtime, agent, "job_output", {"job_id": "test-1"})
    assert text(running) == "(no new output)\n[status: running]"
    assert text(await call(runtime, agent, "job_list", {})) == (
        "test-1 [test] running \u2014 a label"
    )
    gate.set()
    await job.done.wait()
    done = await call(runtime, agent, "job_output", {"job_id": "test-1"})
    assert text(done) == "all done\n[status: completed]"
    assert isinstance(done.value, dict)  # type: ignore[union-attr]
    public = done.value["job"]  # type: ignore[union-attr]
    assert public["status"] == "completed" and public["finishedAt"] >= public["startedAt"]
    assert job.reported


async def test_errors(runtime: Runtime) -> None:
    jobs = await mount(runtime)
    agent = await runtime.agent()
    other = await runtime.agent()
    empty = await call(runtime, agent, "job_output", {"job_id": ""})
    assert text(empty) == 'Error: invalid job_id: expected a non-empty string, got ""'
    unknown = await call(runtime, agent, "job_kill", {"job_id": "bash-9"})
    assert text(unknown) == "Error: unknown job bash-9"
    job = jobs.start(agent, "test", "mine", until_signal)
    foreign = await call(runtime, other, "job_output", {"job_id": job.id})
    assert text(foreign) == f"Error: job {job.id} belongs to another session"
    assert text(await call(runtime, other, "job_list", {})) == "(no background jobs)"
    killed = await call(runtime, other, "job_kill", {"job_id": job.id})
    assert killed.is_error and job.status == "running"


async def test_wait_times_out_then_finishes(runtime: Runtime) -> None:
    jobs = await mount(runtime)
    agent = await runtime.agent()
    gate = asyncio.Event()
    job = jobs.start(agent, "test", "slow", gated(gate))
    timed_out = await call(
        runtime, agent, "job_output", {"job_id": job.id, "wait": True, "timeout_ms": 1}
    )
    assert text(timed_out) == "(no new output)\n[status: running]"
    asyncio.get_running_loop().call_soon(gate.set)
    waited = await call(runtime, agent, "job_output", {"job_id": job.id, "wait": True})
    assert text(waited) == "done\n[status: completed]"


async def test_wait_aborted(runtime: Runtime) -> None:
    jobs = await mount(runtime)
    agent = await runtime.agent()
    job = jobs.start(agent, "test", "slow", gated(asyncio.Event()))
    signal = CancelSignal()
    asyncio.get_running_loop().call_soon(signal.abort, "stop")
    result = await runtime.ctx.tools.execute(
        ToolExecutionInput("c", "job_output", {"job_id": job.id, "wait": True}, signal, agent)
    )
    assert text(result) == "Error: wait aborted"
    assert job.status == "running"


async def test_kill(runtime: Runtime) -> None:
    jobs = await mount(runtime)
    agent = await runtime.agent()
    job = jobs.start(agent, "test", "loop", until_signal)
    killed = await call(runtime, agent, "job_kill", {"job_id": job.id, "reason": "not needed"})
    assert text(killed) == f"requested cancellation of job {job.id}"
    assert job.signal.aborted and job.status == "stopping"
    await job.done.wait()
    assert job.status == "killed"
    again = await call(runtime, agent, "job_kill", {"job_id": job.id})
    assert text(again) == f"job {job.id} had already finished [status: killed, not needed]"


async def test_per_owner_limit(runtime: Runtime) -> None:
    jobs = await mount(runtime, max_active=2)
    agent = await runtime.agent()
    other = await runtime.agent()
    first = jobs.start(agent, "test", "a", until_signal)
    jobs.start(agent, "test", "b", until_signal)
    try:
        jobs.start(agent, "test", "c", until_signal)
    except JobError as error:
        assert error.code == "JOB_LIMIT"
    else:
        raise AssertionError("the third job was started")
    jobs.start(other, "test", "d", until_signal)  # another owner has its own budget
    jobs.kill(first.id)
    await first.done.wait()
    assert jobs.start(agent, "test", "e", until_signal).id == "test-4"


async def test_notice_reaches_a_running_agents_next_step(runtime: Runtime) -> None:
    jobs = await mount(runtime)
    started: list[Job] = []

    @tool
    async def kick(run: ToolRunContext) -> str:
        """Starts a job and waits for it to finish."""
        job = jobs.start(run.agent, "test", "quick", gated(_set()))  # type: ignore[arg-type]
        started.append(job)
        await job.done.wait()
        return "kicked"

    runtime.ctx.tools.register(kick)
    runtime.model.add(reply(tool_call("kick", {})), reply("seen"))
    agent = await runtime.agent()
    await run_prompt(agent, "go")
    notice = (
        "background job test-1 (test: quick) finished [status: completed]. "
        "Read its output with job_output."
    )
    assert notice in request_texts(runtime.model.requests[1])
    assert len(runtime.model.requests) == 2  # no extra wake-up turn


def _set() -> asyncio.Event:
    event = asyncio.Event()
    event.set()
    return event


async def settle_idle(agent: ReactLoopAgent, job: Job) -> None:
    await job.done.wait()
    await wait_all_tasks_blocked()  # the notice has woken the agent, or waits for a turn
    await agent.when_idle()


async def test_notice_wakes_an_idle_agent_at_most_three_times(runtime: Runtime) -> None:
    jobs = await mount(runtime)
    agent = await runtime.agent()
    runtime.model.add(*[reply(f"ack {i}") for i in range(6)])
    for i in range(4):
        job = jobs.start(agent, "test", f"j{i}", gated(_set()))
        await settle_idle(agent, job)
    assert len(runtime.model.requests) == 3  # the fourth notice waits for the next turn
    assert not any("test-4" in t for t in request_texts(runtime.model.requests[2]))
    await run_prompt(agent, "user input")
    # The held notice is delivered with the next turn the user starts (queued before it).
    assert any("background job test-4" in t for t in request_texts(runtime.model.requests[3]))
    assert "user input" in request_texts(runtime.model.requests[-1])
    count = len(runtime.model.requests)
    job = jobs.start(agent, "test", "after", gated(_set()))
    await settle_idle(agent, job)  # user input reset the count: this one wakes again
    assert len(runtime.model.requests) == count + 1


async def test_read_output_suppresses_the_notice(runtime: Runtime) -> None:
    jobs = await mount(runtime)
    agent = await runtime.agent()
    gate = asyncio.Event()
    job = jobs.start(agent, "test", "watched", gated(gate))
    asyncio.get_running_loop().call_soon(gate.set)
    await call(runtime, agent, "job_output", {"job_id": job.id, "wait": True})
    await wait_all_tasks_blocked()
    await agent.when_idle()
    assert runtime.model.requests == []


async def test_jobs_are_killed_when_the_owner_is_disposed(runtime: Runtime) -> None:
    jobs = await mount(runtime)
    agent = await runtime.agent()
    job = jobs.start(agent, "test", "long", until_signal)
    await runtime.handles.pop().dispose()
    await job.done.wait()
    assert job.status == "killed" and job.detail == "owner disposed"
    assert jobs.get(job.id) is None  # forgotten with its owner


async def test_unloading_the_plugin_cancels_jobs(runtime: Runtime) -> None:
    fiber = await runtime.ctx.plugin(JobsPlugin, {}, id="jobs")
    jobs = runtime.ctx.require(JOBS)
    agent = await runtime.agent()
    stubborn = jobs.start(agent, "test", "ignores its signal", gated(asyncio.Event()))
    await fiber.dispose()
    assert stubborn.status == "killed" and stubborn.signal.aborted
    assert runtime.ctx.get(JOBS) is None
    assert runtime.ctx.tools.get("job_output") is None


async def test_background_subagent_result_read_with_job_output(runtime: Runtime) -> None:
    await runtime.ctx.plugin(JobsPlugin, {}, id="jobs")  # the subagents plugin offers the tools
    await runtime.ctx.plugin(SubagentsPlugin, {"background_mode": "job"})
    parent_script = iter(
        [
            reply(
                tool_call(
                    "subagent",
                    {"description": "bg task", "prompt": "child task", "run_in_background": True},
                )
            ),
            reply(tool_call("job_output", {"job_id": "subagent-1", "wait": True})),
            reply("parent done"),
        ]
    )

    def route(options: GenerateOptions) -> Any:
        if request_texts(options)[:1] == ["child task"]:
            return reply("child answer")
        return next(parent_script)

    runtime.model.add(*[route] * 4)
    parent = await runtime.agent()
    schema = next(t for t in runtime.ctx.tools.schemas() if t.name == "subagent")
    assert "run_in_background" in schema.parameters["properties"]  # type: ignore[operator]
    result = await run_prompt(parent, "delegate in the background")
    assert result.text == "parent done"
    results = [e for e in parent.session.events if e.type == "tool/result"]
    texts = [e.data["message"]["content"][0]["content"][0]["text"] for e in results]
    assert texts == [
        "started background subagent job subagent-1",
        "child answer\n[status: completed]",
    ]


async def test_background_refused_without_jobs(runtime: Runtime) -> None:
    await runtime.ctx.plugin(SubagentsPlugin, {"background_mode": "job"})
    agent = await runtime.agent()
    refused = await call(
        runtime, agent, "subagent", {"description": "d", "prompt": "p", "run_in_background": True}
    )
    assert text(refused) == (
        "Error: run_in_background is disabled for this tool instance (enableRunInBackground: false)"
    )


async def test_unloading_the_plugin_sends_no_notice(runtime: Runtime) -> None:
    import asyncio

    from dsh.plugins.jobs import JOBS, JobsPlugin

    fiber = await runtime.ctx.plugin(JobsPlugin)
    agent = await runtime.agent()
    started = asyncio.Event()

    async def forever(signal: object) -> str:
        started.set()
        await asyncio.Event().wait()  # until the plugin's unloading cancels it
        return "never"

    runtime.ctx.require(JOBS).start(agent, "test", "x", forever)
    await started.wait()
    await fiber.dispose()
    await agent.when_idle()
    assert agent.status == "idle"
    assert runtime.model.requests == []  # nobody was woken to read a tool that is gone
