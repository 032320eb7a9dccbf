"""The approval plugin: the policy, answerers, auto-approve, memory and the durable record."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator
from typing import Any

import pytest

from dsh import Context
from dsh.kernel import CancelSignal, PluginError, load_config
from dsh.plugins.approval import (
    APPROVAL,
    DEFAULT_POLICY,
    Answer,
    ApprovalConfig,
    ApprovalPlugin,
    ApprovalRequest,
    Rule,
    decide,
)
from dsh.session import SESSION_DISPOSED, Session, SessionHeader
from dsh.tools import (
    TOOLS_PRE_EXECUTE,
    Ask,
    Decision,
    Deny,
    ToolExecutionInput,
    ToolResult,
    ToolsPlugin,
    tool,
)

_ids = itertools.count(1)


class Agent:
    def __init__(self, session: Session | None = None) -> None:
        sid = f"session-{next(_ids)}"
        self.session = session or Session.create(sid, header=SessionHeader(sid, 0, "/tmp"))


class World:
    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.runs = 0
        self.asked: list[ApprovalRequest] = []
        self.agent = Agent()

    async def call(
        self, name: str = "probe", agent: Any = "default", signal: CancelSignal | None = None
    ) -> ToolResult:
        return await self.ctx.tools.execute(
            ToolExecutionInput(
                f"call-{next(_ids)}",
                name,
                {},
                signal or CancelSignal(),
                self.agent if agent == "default" else agent,
            )
        )

    def answer_with(self, answer: Answer) -> None:
        async def answerer(request: ApprovalRequest) -> Answer:
            self.asked.append(request)
            return answer

        self.ctx.require(APPROVAL).set_answerer(answerer)

    def records(self, agent: Agent | None = None) -> list[tuple[str, dict[str, Any]]]:
        session = (agent or self.agent).session
        return [(e.type, dict(e.data)) for e in session.events if e.type.startswith("approval/")]


@pytest.fixture
async def make_world() -> AsyncIterator[Any]:
    roots: list[Context] = []

    async def make(**config: Any) -> World:
        ctx = Context()
        roots.append(ctx)
        await ctx.plugin(ToolsPlugin)
        await ctx.plugin(ApprovalPlugin, config)
        world = World(ctx)

        @tool
        def probe() -> str:
            """Count a run."""
            world.runs += 1
            return "ran"

        for name in ("probe", "read", "write", "edit", "bash", "glob", "grep", "todo_write"):
            ctx.tools.register(probe if name == "probe" else _named(probe, name))
        return world

    yield make
    for ctx in roots:
        await ctx.owner.dispose()


def _named(definition: Any, name: str) -> Any:
    from msgspec.structs import replace

    return replace(definition, name=name)


def text(result: ToolResult) -> str:
    return result.content[0].text  # type: ignore[union-attr]


# -- the matrix ---------------------------------------------------------------------------------

NO_CHANNEL = (
    'Error: tool "probe" needs the user\'s approval, and nobody can give it in this run: the '
    "call did not run (nobody refused it). Go on without it, or end your turn with what you "
    "would have done."
)
MATRIX = [
    # action, answer, auto_approve, runs?, message, recorded decision
    ("allow", None, False, True, "ran", None),
    ("allow", "deny", True, True, "ran", None),
    (
        "deny",
        None,
        False,
        False,
        'Error: tool "probe" is denied by the approval policy (rule "probe")',
        None,
    ),
    (
        "deny",
        "once",
        True,
        False,
        'Error: tool "probe" is denied by the approval policy (rule "probe")',
        None,
    ),
    ("ask", "once", False, True, "ran", ("once", "answerer")),
    ("ask", "always", False, True, "ran", ("always", "answerer")),
    ("ask", "deny", False, False, 'Error: the user rejected tool "probe"', ("deny", "answerer")),
    ("ask", None, False, False, NO_CHANNEL, ("deny", "no-answerer")),
    ("ask", None, True, True, "ran", None),  # approved by configuration: nothing logged
    ("ask", "deny", True, False, 'Error: the user rejected tool "probe"', ("deny", "answerer")),
    ("ask", "once", True, True, "ran", ("once", "answerer")),
]


@pytest.mark.parametrize(("action", "answer", "auto", "runs", "message", "decision"), MATRIX)
async def test_approval_matrix(
    make_world: Any,
    action: str,
    answer: Answer | None,
    auto: bool,
    runs: bool,
    message: str,
    decision: tuple[str, str] | None,
) -> None:
    world = await make_world(policy=[{"tool": "probe", "action": action}], auto_approve=auto)
    if answer is not None:
        world.answer_with(answer)
    result = await world.call()
    assert text(result) == message
    assert result.is_error is not runs
    assert world.runs == (1 if runs else 0)
    records = world.records()
    if decision is None:
        assert records == []
        assert world.asked == []
        return
    call_id = records[0][1]["callId"]
    assert records == [
        (
            "approval/asked",
            {"callId": call_id, "tool": "probe", "reason": 'approval policy: rule "probe"'},
        ),
        (
            "approval/decided",
            {"callId": call_id, "tool": "probe", "decision": decision[0], "by": decision[1]},
        ),
    ]
    assert len(world.asked) == (1 if decision[1] == "answerer" else 0)
    if world.asked:
        request = world.asked[0]
        assert (request.tool, request.call_id, request.session_id) == (
            "probe",
            call_id,
            world.agent.session.id,
        )
    # A second call: only `always` is remembered.
    await world.call()
    asks_again = decision[0] != "always"
    assert len([r for r in world.records() if r[0] == "approval/asked"]) == (2 if asks_again else 1)


# -- the policy ---------------------------------------------------------------------------------


def test_default_policy() -> None:
    config = ApprovalConfig()
    kinds = {
        name: type(decide(config, name)).__name__
        for name in (
            *("read", "glob", "grep", "todo_write", "skill", "ask_user_question"),
            *("list_agents", "interrupt_agent"),
            *("write", "edit", "bash", "web_fetch"),
        )
    }
    assert kinds == {
        "read": "Allow",
        "glob": "Allow",
        "grep": "Allow",
        "todo_write": "Allow",
        "skill": "Allow",
        "ask_user_question": "Allow",
        "list_agents": "Allow",
        "interrupt_agent": "Allow",
        "write": "Ask",
        "edit": "Ask",
        "bash": "Ask",
        "web_fetch": "Ask",
    }
    assert decide(config, "web_fetch") == Ask("approval policy: no rule matched")
    assert len(DEFAULT_POLICY) == 11


def test_user_rules_come_first_and_patterns_match() -> None:
    config = load_config(
        ApprovalConfig,
        {
            "policy": [{"tool": "bash", "action": "allow"}, {"tool": "web_*", "action": "deny"}],
            "unmatched": "allow",
        },
    )
    assert type(decide(config, "bash")).__name__ == "Allow"
    assert decide(config, "web_search") == Deny(
        'tool "web_search" is denied by the approval policy (rule "web_*")'
    )
    assert type(decide(config, "write")).__name__ == "Ask"  # the defaults still apply
    assert type(decide(config, "custom")).__name__ == "Allow"
    assert type(decide(ApprovalConfig(default_policy=[]), "read")).__name__ == "Ask"


def test_plugin_defaults_come_after_user_rules_and_before_the_default_policy() -> None:
    def mcp_defaults(tool: str) -> Rule | None:
        return Rule(tool="mcp__*", action="allow") if tool.startswith("mcp__") else None

    def claims_read(tool: str) -> Rule | None:
        return Rule(tool="read", action="deny") if tool == "read" else None

    config = load_config(ApprovalConfig, {"policy": [{"tool": "mcp__x__*", "action": "deny"}]})
    defaults = (mcp_defaults, claims_read)
    assert type(decide(config, "mcp__y__tool", defaults)).__name__ == "Allow"
    assert decide(config, "mcp__x__tool", defaults) == Deny(
        'tool "mcp__x__tool" is denied by the approval policy (rule "mcp__x__*")'
    )
    assert type(decide(config, "read", defaults)).__name__ == "Deny"  # before default_policy
    assert type(decide(config, "bash", defaults)).__name__ == "Ask"


async def test_bad_config_is_a_plugin_error() -> None:
    ctx = Context()
    with pytest.raises(PluginError, match=r"config\.policy\[0\]\.action: expected one of 'allow'"):
        await ctx.plugin(ApprovalPlugin, {"policy": [{"tool": "x", "action": "maybe"}]})
    await ctx.owner.dispose()


async def test_stricter_of_policy_and_other_listeners(make_world: Any) -> None:
    world = await make_world()
    world.answer_with("once")

    async def other(exec: Any, next: Any) -> Any:
        await next()
        return Deny("hook says no") if exec.name == "read" else Ask("hook wants a look")

    world.ctx.on(TOOLS_PRE_EXECUTE, other, prepend=True)
    assert text(await world.call("read")) == "Error: hook says no"
    assert text(await world.call("glob")) == "ran"  # the hook's ask, answered once
    [asked] = [d for t, d in world.records() if t == "approval/asked"]
    assert asked["reason"] == "hook wants a look"


# -- answers ------------------------------------------------------------------------------------


async def test_always_is_per_session_and_survives_a_resume(make_world: Any) -> None:
    world = await make_world()
    world.answer_with("always")
    await world.call("bash")
    await world.call("bash")
    assert len(world.asked) == 1
    other = Agent()
    await world.call("bash", agent=other)
    assert len(world.asked) == 2
    # A new runtime reading the same log (a resume) remembers too.
    resumed = await make_world()
    resumed.answer_with("deny")
    assert text(await resumed.call("bash", agent=world.agent)) == "ran"
    assert text(await resumed.call("edit", agent=world.agent)).startswith("Error: the user")


async def test_always_is_forgotten_when_the_session_is_disposed(make_world: Any) -> None:
    world = await make_world()
    world.answer_with("always")
    await world.call("bash")
    assert len(world.asked) == 1
    sid = world.agent.session.id
    world.ctx.bus.emit(SESSION_DISPOSED, world.agent.session, object())
    # A later session under the same id, without that answer in its log, is asked again.
    world.agent = Agent(Session.create(sid, header=SessionHeader(sid, 0, "/tmp")))
    await world.call("bash")
    assert len(world.asked) == 2


async def test_cancel_while_waiting_denies(make_world: Any) -> None:
    world = await make_world()
    started = asyncio.Event()
    dismissed = asyncio.Event()

    async def slow(request: ApprovalRequest) -> Answer:
        started.set()
        try:
            await asyncio.Event().wait()  # nobody answers
        except asyncio.CancelledError:
            dismissed.set()
            raise
        return "once"

    world.ctx.require(APPROVAL).set_answerer(slow)
    stop = CancelSignal()
    call = asyncio.ensure_future(world.call("bash", signal=stop))
    await started.wait()
    stop.abort("user")
    result = await call
    assert text(result) == "Error: tool call aborted before dispatch"
    assert world.runs == 0
    assert dismissed.is_set()
    assert world.records()[-1][1]["decision"] == "deny"
    assert world.records()[-1][1]["by"] == "cancelled"


async def test_answerer_failures_deny(make_world: Any) -> None:
    world = await make_world()

    async def broken(request: ApprovalRequest) -> Answer:
        raise RuntimeError("ui crashed")

    async def nonsense(request: ApprovalRequest) -> Any:
        return "yes"

    approval = world.ctx.require(APPROVAL)
    for answerer in (broken, nonsense):
        dispose = approval.set_answerer(answerer)
        assert text(await world.call("bash")) == 'Error: the user rejected tool "bash"'
        assert world.records()[-1][1]["by"] == "answerer-error"
        dispose()


async def test_a_denial_carries_its_reason_to_the_model_and_the_log(make_world: Any) -> None:
    world = await make_world()
    answers = iter([Decision.deny("use the read tool instead"), Decision.always()])

    async def answerer(request: ApprovalRequest) -> Decision:
        return next(answers)

    world.ctx.require(APPROVAL).set_answerer(answerer)
    result = await world.call("bash")
    assert text(result) == 'Error: the user rejected tool "bash": use the read tool instead'
    decided = world.records()[-1][1]
    assert (decided["decision"], decided["reason"]) == ("deny", "use the read tool instead")
    assert text(await world.call("bash")) == "ran"
    assert "reason" not in world.records()[-1][1]
    assert text(await world.call("bash")) == "ran"  # `always`: not asked again


async def test_answerers_stack_and_go_with_their_owner(make_world: Any) -> None:
    world = await make_world()
    world.answer_with("deny")
    child = world.ctx.child("ui")
    answers: list[str] = []

    async def yes(request: ApprovalRequest) -> Answer:
        answers.append(request.tool)
        return "once"

    child.require(APPROVAL).set_answerer(yes)
    assert text(await world.call("bash")) == "ran"
    await child.owner.dispose()
    assert text(await world.call("bash")) == 'Error: the user rejected tool "bash"'
    assert answers == ["bash"]


async def test_an_unknown_tool_is_not_subject_to_the_policy(make_world: Any) -> None:
    world = await make_world()
    world.answer_with("once")
    result = await world.call("frobnicate")
    assert result.is_error and result.error.code == "UNKNOWN_TOOL"  # type: ignore[union-attr]
    assert world.asked == []
    assert world.records() == []


async def test_a_call_without_agent_is_denied_by_the_pipeline(make_world: Any) -> None:
    world = await make_world(auto_approve=True)
    result = await world.call("bash", agent=None)
    assert text(result) == (
        'Error: tool "bash" requires approval (approval policy: rule "bash"), but the call has '
        "no agent to route it through"
    )
