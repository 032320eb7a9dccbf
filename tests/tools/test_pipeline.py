import asyncio
import itertools
from typing import Any

import msgspec
import pytest

from dsh import Context
from dsh.kernel import CancelSignal, Next, read_secret
from dsh.llm import HarnessError, TextBlock, user_message
from dsh.tools import (
    APPROVAL,
    TOOLS_EXECUTE,
    TOOLS_POST_EXECUTE,
    TOOLS_PRE_EXECUTE,
    TOOLS_RESULT,
    Accept,
    Allow,
    Ask,
    Block,
    Decision,
    Deny,
    PostDecision,
    PostExecute,
    PreDecision,
    ToolDefinition,
    ToolErrorInfo,
    ToolExecution,
    ToolExecutionInput,
    ToolFailure,
    ToolOutcome,
    ToolResult,
    ToolRunContext,
    ToolSuccess,
)

from .conftest import Agent

OBJECT = {"type": "object", "properties": {"x": {"type": "integer"}}}


class BoomError(HarnessError):
    def __init__(self) -> None:
        super().__init__("boom", "BOOM")


class FakeApproval:
    def __init__(self, answer: Decision) -> None:
        self.answer = answer
        self.asked: list[tuple[ToolExecution, str | None]] = []

    async def request(self, exec: ToolExecution, reason: str | None) -> Decision:
        self.asked.append((exec, reason))
        return self.answer


def define(name: str = "t", body: Any = None, **kwargs: Any) -> ToolDefinition:
    def default(args: Any, run: ToolRunContext) -> Any:
        return args.get("x", 0) * 2

    return ToolDefinition(
        name, "A test tool.", OBJECT, body or default, output_schema={"type": "integer"}, **kwargs
    )


def call(
    name: str = "t", args: Any = None, signal: CancelSignal | None = None, **kw: Any
) -> ToolExecutionInput:
    return ToolExecutionInput(
        "call-1", name, {"x": 2} if args is None else args, signal or CancelSignal(), **kw
    )


def text(result: ToolResult) -> str:
    return "".join(b.text for b in result.content if isinstance(b, TextBlock))


# -- the matrix --------------------------------------------------------------------------------

PRE = ["allow", "deny", "ask-approved", "ask-rejected", "ask-no-service", "ask-no-agent"]
BODY = ["ok", "raise", "invalid-output"]
POST = ["accept", "block"]

DENIALS = {
    "deny": "not here",
    "ask-rejected": 'the user rejected tool "t"',
    "ask-no-service": 'tool "t" requires approval (careful), but no approval service is available',
    "ask-no-agent": (
        'tool "t" requires approval (careful), but the call has no agent to route it through'
    ),
}


@pytest.mark.parametrize(("pre", "body", "post"), list(itertools.product(PRE, BODY, POST)))
async def test_pipeline_matrix(ctx: Context, pre: str, body: str, post: str) -> None:
    ran: list[object] = []
    posted: list[ToolResult] = []

    def execute(args: Any, run: ToolRunContext) -> Any:
        ran.append(args)
        if body == "raise":
            raise BoomError()
        return "not an integer" if body == "invalid-output" else 42

    ctx.tools.register(define(body=execute))
    if pre in ("ask-approved", "ask-rejected", "ask-no-agent"):
        ctx.provide(APPROVAL, FakeApproval(Decision("once" if pre == "ask-approved" else "deny")))

    async def gate(exec: ToolExecution, next: Next[ToolExecution, PreDecision]) -> PreDecision:
        if pre == "allow":
            return await next()
        if pre == "deny":
            return Deny("not here")
        return Ask("careful")

    async def police(payload: PostExecute, next: Next[PostExecute, PostDecision]) -> PostDecision:
        posted.append(payload.result)
        return Block("blocked: try again") if post == "block" else await next()

    ctx.on(TOOLS_PRE_EXECUTE, gate)
    ctx.on(TOOLS_POST_EXECUTE, police)
    agent = None if pre == "ask-no-agent" else Agent()
    result = await ctx.tools.execute(call(agent=agent))

    denied = pre in DENIALS
    assert len(ran) == (0 if denied else 1)
    assert len(posted) == 1  # post-execute sees denials and tool errors too
    before = posted[0]
    if denied:
        assert isinstance(before, ToolFailure)
        assert before.error.message == DENIALS[pre]
        assert text(before) == f"Error: {DENIALS[pre]}"
    elif body == "ok":
        assert isinstance(before, ToolSuccess) and before.value == 42
        assert text(before) == "42"
    elif body == "raise":
        assert isinstance(before, ToolFailure)
        assert (before.error.message, before.error.name, before.error.code) == (
            "boom",
            "BoomError",
            "BOOM",
        )
        assert before.content == (TextBlock("Error: boom"),)
    else:
        assert isinstance(before, ToolFailure)
        assert before.error.code == "INVALID_TOOL_OUTPUT"
        assert text(before) == 'Error: tool "t" returned invalid output: "value" must be an integer'
    if post == "block":
        assert isinstance(result, ToolFailure)
        assert result.content == (TextBlock("blocked: try again"),)
        assert result.error.message == "blocked: try again"
    else:
        assert result == before


async def ask_writes_files(
    exec: ToolExecution, next: Next[ToolExecution, PreDecision]
) -> PreDecision:
    return Ask("writes files")


async def test_approval_service_receives_the_execution_and_reason(ctx: Context) -> None:
    approval = FakeApproval(Decision.once())
    ctx.provide(APPROVAL, approval)
    ctx.tools.register(define())
    ctx.on(TOOLS_PRE_EXECUTE, ask_writes_files)
    agent = Agent()
    result = await ctx.tools.execute(call(agent=agent))
    assert isinstance(result, ToolSuccess)
    [(exec, reason)] = approval.asked
    assert exec.agent is agent and exec.name == "t" and reason == "writes files"


async def test_nobody_is_asked_about_arguments_the_tool_would_refuse(ctx: Context) -> None:
    approval = FakeApproval(Decision.once())
    ctx.provide(APPROVAL, approval)
    ctx.tools.register(define())
    ctx.on(TOOLS_PRE_EXECUTE, ask_writes_files)
    result = await ctx.tools.execute(call(args={"x": "two"}, agent=Agent()))
    assert isinstance(result, ToolFailure) and result.error.code == "INVALID_ARGS"
    assert approval.asked == []


async def test_an_approval_cancelled_by_the_signal_is_aborted_before_dispatch(
    ctx: Context, signal: CancelSignal
) -> None:
    class Cancelling:
        async def request(self, exec: ToolExecution, reason: str | None) -> Decision:
            signal.abort("user")
            return Decision.deny()

    ctx.provide(APPROVAL, Cancelling())
    ctx.tools.register(define())
    ctx.on(TOOLS_PRE_EXECUTE, lambda e, n: Ask())
    result = await ctx.tools.execute(call(signal=signal, agent=Agent()))
    assert isinstance(result, ToolFailure) and result.error.code == "ABORTED_BEFORE_DISPATCH"


# -- failures that skip post-execute -----------------------------------------------------------


async def test_a_raising_pre_execute_listener_fails_the_call_and_skips_post_execute(
    ctx: Context,
) -> None:
    ran, posted = [], []
    ctx.tools.register(define(body=lambda a, r: ran.append(1) or 1))

    async def broken(exec: ToolExecution, next: Next[ToolExecution, PreDecision]) -> PreDecision:
        raise ValueError("policy crashed")

    ctx.on(TOOLS_PRE_EXECUTE, broken)
    ctx.on(TOOLS_POST_EXECUTE, lambda p, n: posted.append(p) or n())
    result = await ctx.tools.execute(call())
    assert isinstance(result, ToolFailure)
    assert result.content == (TextBlock("Error: policy crashed"),)
    assert (result.error.name, result.error.code) == ("ValueError", None)
    assert ran == [] and posted == []


async def test_a_pre_execute_listener_returning_junk_is_a_failure(ctx: Context) -> None:
    ctx.tools.register(define())

    async def junk(exec: ToolExecution, next: Next[ToolExecution, Any]) -> Any:
        return "yes"

    ctx.on(TOOLS_PRE_EXECUTE, junk)
    result = await ctx.tools.execute(call())
    assert isinstance(result, ToolFailure)
    assert "not Allow, Deny or Ask" in result.error.message


async def test_non_lossless_arguments_fail_before_policy(ctx: Context) -> None:
    seen: list[object] = []
    ctx.tools.register(define())
    ctx.on(TOOLS_PRE_EXECUTE, lambda e, n: seen.append(e) or n())
    ctx.on(TOOLS_POST_EXECUTE, lambda p, n: seen.append(p) or n())
    result = await ctx.tools.execute(call(args={"x": float("nan")}))
    assert isinstance(result, ToolFailure)
    assert result.error.code == "INVALID_ARGS"
    assert result.error.message.startswith("invalid arguments: arguments.x:")
    assert seen == []


# -- cancellation ------------------------------------------------------------------------------


async def test_a_signal_aborted_before_the_call_skips_everything(
    ctx: Context, signal: CancelSignal
) -> None:
    seen: list[object] = []
    ctx.tools.register(define(body=lambda a, r: seen.append("body") or 1))
    ctx.on(TOOLS_PRE_EXECUTE, lambda e, n: seen.append("pre") or n())
    ctx.on(TOOLS_POST_EXECUTE, lambda p, n: seen.append("post") or n())
    signal.abort("user")
    result = await ctx.tools.execute(call(signal=signal))
    assert isinstance(result, ToolFailure)
    assert result.content == (TextBlock("Error: tool call aborted before dispatch"),)
    assert (result.error.name, result.error.code) == ("AbortError", "ABORTED_BEFORE_DISPATCH")
    assert seen == []


async def test_abort_during_pre_execute_is_aborted_before_dispatch_and_post_executed(
    ctx: Context, signal: CancelSignal
) -> None:
    seen: list[str] = []
    ctx.tools.register(define(body=lambda a, r: seen.append("body") or 1))

    async def slow_gate(exec: ToolExecution, next: Next[ToolExecution, PreDecision]) -> PreDecision:
        signal.abort("user")
        return await next()

    ctx.on(TOOLS_PRE_EXECUTE, slow_gate)
    ctx.on(TOOLS_POST_EXECUTE, lambda p, n: seen.append("post") or n())
    result = await ctx.tools.execute(call(signal=signal))
    assert isinstance(result, ToolFailure) and result.error.code == "ABORTED_BEFORE_DISPATCH"
    assert seen == ["post"]


async def test_abort_after_a_successful_body_replaces_it_with_aborted(
    ctx: Context, signal: CancelSignal
) -> None:
    def body(args: Any, run: ToolRunContext) -> int:
        signal.abort("user")
        return 1

    ctx.tools.register(define(body=body))
    result = await ctx.tools.execute(call(signal=signal))
    assert isinstance(result, ToolFailure)
    assert result.content == (TextBlock("Error: tool call aborted"),)
    assert (result.error.name, result.error.code) == ("AbortError", "ABORTED")


async def test_abort_after_a_failed_body_keeps_the_tool_error(
    ctx: Context, signal: CancelSignal
) -> None:
    def body(args: Any, run: ToolRunContext) -> int:
        signal.abort("user")
        raise BoomError()

    ctx.tools.register(define(body=body))
    result = await ctx.tools.execute(call(signal=signal))
    assert isinstance(result, ToolFailure) and result.error.code == "BOOM"


async def test_a_body_raising_aborted_on_its_signal_is_aborted(
    ctx: Context, signal: CancelSignal
) -> None:
    async def body(args: Any, run: ToolRunContext) -> int:
        signal.abort("user")
        await asyncio.sleep(0)
        run.signal.raise_if_aborted()
        return 1

    ctx.tools.register(define(body=body))
    result = await ctx.tools.execute(call(signal=signal))
    assert isinstance(result, ToolFailure) and result.error.code == "ABORTED"


# -- tools/execute -----------------------------------------------------------------------------


async def test_an_execute_wrapper_may_swap_the_signal_and_the_caller_signal_is_fused_back(
    ctx: Context, signal: CancelSignal
) -> None:
    own = CancelSignal()
    seen: list[CancelSignal] = []

    async def body(args: Any, run: ToolRunContext) -> int:
        seen.append(run.signal)
        signal.abort("caller")  # the body must see the caller's abort through the fused signal
        assert run.signal.aborted and run.signal.reason == "caller"
        return 1

    async def wrapper(exec: ToolExecution, next: Next[ToolExecution, ToolResult]) -> ToolResult:
        return await next(msgspec.structs.replace(exec, signal=own))

    ctx.tools.register(define(body=body))
    ctx.on(TOOLS_EXECUTE, wrapper)
    result = await ctx.tools.execute(call(signal=signal))
    assert seen[0] is not signal and seen[0] is not own
    assert isinstance(result, ToolFailure) and result.error.code == "ABORTED"
    assert not own.aborted


async def test_a_wrapper_signal_aborted_before_the_body_is_aborted_before_dispatch(
    ctx: Context,
) -> None:
    ran: list[int] = []
    own = CancelSignal()
    own.abort("timeout")

    async def wrapper(exec: ToolExecution, next: Next[ToolExecution, ToolResult]) -> ToolResult:
        return await next(msgspec.structs.replace(exec, signal=own))

    ctx.tools.register(define(body=lambda a, r: ran.append(1) or 1))
    ctx.on(TOOLS_EXECUTE, wrapper)
    result = await ctx.tools.execute(call())
    assert isinstance(result, ToolFailure) and result.error.code == "ABORTED_BEFORE_DISPATCH"
    assert ran == []


async def test_a_wrapper_authored_success_is_validated_and_rendered(ctx: Context) -> None:
    ran: list[int] = []

    async def cached(exec: ToolExecution, next: Next[ToolExecution, ToolResult]) -> ToolResult:
        return ToolSuccess(7, ())

    ctx.tools.register(define(body=lambda a, r: ran.append(1) or 1))
    ctx.on(TOOLS_EXECUTE, cached)
    result = await ctx.tools.execute(call())
    assert isinstance(result, ToolSuccess) and result.value == 7 and text(result) == "7"
    assert ran == []

    ctx.on(TOOLS_EXECUTE, lambda e, n: ToolSuccess("seven", ()), prepend=True)
    result = await ctx.tools.execute(call())
    assert isinstance(result, ToolFailure) and result.error.code == "INVALID_TOOL_OUTPUT"


async def test_a_raising_execute_wrapper_is_a_failure_that_is_still_post_executed(
    ctx: Context,
) -> None:
    posted: list[ToolResult] = []

    async def broken(exec: ToolExecution, next: Next[ToolExecution, ToolResult]) -> ToolResult:
        raise TimeoutError("took too long")

    ctx.tools.register(define())
    ctx.on(TOOLS_EXECUTE, broken)
    ctx.on(TOOLS_POST_EXECUTE, lambda p, n: posted.append(p.result) or n())
    result = await ctx.tools.execute(call())
    assert isinstance(result, ToolFailure)
    assert result.content == (TextBlock("Error: took too long"),)
    assert posted == [result]


async def test_an_unknown_tool_is_a_failure(ctx: Context) -> None:
    result = await ctx.tools.execute(call(name="missing"))
    assert isinstance(result, ToolFailure)
    assert result.content == (TextBlock('Error: unknown tool "missing"'),)
    assert result.error.log_info() == {"name": "ToolNotFoundError", "code": "UNKNOWN_TOOL"}


async def test_invalid_arguments_reach_policy_and_fail_at_dispatch(ctx: Context) -> None:
    seen: list[object] = []
    ctx.tools.register(define())
    ctx.on(TOOLS_PRE_EXECUTE, lambda e, n: seen.append(e.arguments) or n())
    result = await ctx.tools.execute(call(args='{"x": 2'))
    assert seen == ['{"x": 2']
    assert isinstance(result, ToolFailure)
    assert result.content == (TextBlock('Error: invalid arguments: "arguments" must be an object'),)
    result = await ctx.tools.execute(call(args={"x": "2"}))
    assert (
        isinstance(result, ToolFailure)
        and result.error.message == 'invalid arguments: "x" must be an integer'
    )


async def test_a_lone_surrogate_in_tool_output_becomes_a_replacement_character(
    ctx: Context,
) -> None:
    """A surrogate-escaped file name (`os.listdir` of b"bad\\xffname") in a tool's output
    must not reach the log or the next request as a lone surrogate."""
    name = "bad\udcffname.txt"
    ctx.tools.register(ToolDefinition("ls", "List.", {"type": "object"}, lambda args, run: name))
    result = await ctx.tools.execute(call(name="ls", args={}))
    assert result.content == (TextBlock("bad\ufffdname.txt"),)
    failed = await ctx.tools.execute(call(name="missing\ud800"))
    assert text(failed) == 'Error: unknown tool "missing\ufffd"'


# -- post-execute, finalize_content, contexts ------------------------------------------------------


async def test_accept_replaces_the_content_and_keeps_the_value(ctx: Context) -> None:
    note = user_message("remember this")

    async def shorten(payload: PostExecute, next: Next[PostExecute, PostDecision]) -> PostDecision:
        return Accept("short", additional_contexts=[note])

    ctx.tools.register(define())
    ctx.on(TOOLS_POST_EXECUTE, shorten)
    result = await ctx.tools.execute(call())
    assert isinstance(result, ToolSuccess) and result.value == 4
    assert result.content == (TextBlock("short"),)
    assert result.additional_contexts == (note,)


async def test_deferred_contexts_come_first_survive_errors_and_are_dropped_by_block(
    ctx: Context,
) -> None:
    deferred, added = user_message("from the tool"), user_message("from policy")

    def body(args: Any, run: ToolRunContext) -> int:
        run.defer_context(deferred)
        if args["x"] < 0:
            raise BoomError()
        return 1

    decision: list[PostDecision] = [Accept(additional_contexts=[added])]
    ctx.tools.register(define(body=body))
    ctx.on(TOOLS_POST_EXECUTE, lambda p, n: decision[0])
    result = await ctx.tools.execute(call())
    assert result.additional_contexts == (deferred, added)
    result = await ctx.tools.execute(call(args={"x": -1}))
    assert isinstance(result, ToolFailure) and result.additional_contexts == (deferred, added)
    decision[0] = Block("no", additional_contexts=[added])
    result = await ctx.tools.execute(call())
    assert result.additional_contexts == (added,)


async def test_defer_context_takes_only_user_messages(ctx: Context) -> None:
    def body(args: Any, run: ToolRunContext) -> int:
        run.defer_context("not a message")  # type: ignore[arg-type]
        return 1

    ctx.tools.register(define(body=body))
    result = await ctx.tools.execute(call())
    assert isinstance(result, ToolFailure) and "user-role Message" in result.error.message


async def test_conclude_turn_marks_a_success_only(ctx: Context) -> None:
    def body(args: Any, run: ToolRunContext) -> int:
        run.conclude_turn()
        if args["x"] < 0:
            raise BoomError()
        return 1

    ctx.tools.register(define(body=body))
    assert (await ctx.tools.execute(call())).concludes_turn is True
    assert (await ctx.tools.execute(call(args={"x": -1}))).concludes_turn is False
    ctx.tools.register(define("other"))
    assert (await ctx.tools.execute(call("other"))).concludes_turn is False


async def test_a_raising_post_execute_listener_is_a_failure(ctx: Context) -> None:
    async def broken(payload: PostExecute, next: Next[PostExecute, PostDecision]) -> PostDecision:
        raise KeyError("nope")

    ctx.tools.register(define())
    ctx.on(TOOLS_POST_EXECUTE, broken)
    result = await ctx.tools.execute(call())
    assert isinstance(result, ToolFailure) and result.error.name == "KeyError"


async def test_finalize_content_runs_once_for_every_outcome(
    ctx: Context, signal: CancelSignal
) -> None:
    seen: list[ToolResult] = []

    def finalize(exec: ToolExecution, result: ToolResult) -> Any:
        seen.append(result)
        return None if result.is_error else [TextBlock("final")]

    ctx.tools.register(define(finalize_content=finalize))
    result = await ctx.tools.execute(call())
    assert result.content == (TextBlock("final"),) and len(seen) == 1
    signal.abort()
    result = await ctx.tools.execute(call(signal=signal))
    assert isinstance(result, ToolFailure) and result.error.code == "ABORTED_BEFORE_DISPATCH"
    assert len(seen) == 2


async def test_tools_result_sees_the_final_outcome_once_and_its_failures_are_contained(
    ctx: Context,
) -> None:
    outcomes: list[ToolOutcome] = []

    def broken(outcome: ToolOutcome) -> None:
        raise RuntimeError("observer crashed")

    ctx.tools.register(define())
    ctx.on(TOOLS_RESULT, broken)
    ctx.on(TOOLS_RESULT, outcomes.append)
    agent = Agent()
    result = await ctx.tools.execute(call(agent=agent, root_call_id="root-1"))
    [outcome] = outcomes
    assert outcome.result is result
    assert outcome.exec.call_id == "call-1" and outcome.exec.root_call_id == "root-1"
    assert outcome.exec.agent is agent


async def test_execution_tokens_are_fresh_and_arguments_frozen(ctx: Context) -> None:
    seen: list[ToolExecution] = []

    def body(args: Any, run: ToolRunContext) -> int:
        with pytest.raises(TypeError):
            args["x"] = 3
        return 1

    ctx.tools.register(define(body=body))
    ctx.on(TOOLS_RESULT, lambda o: seen.append(o.exec))
    arguments = {"x": 2}
    await ctx.tools.execute(call(args=arguments))
    await ctx.tools.execute(call(args=arguments))
    assert seen[0].token is not seen[1].token
    assert seen[0].root_call_id == "call-1"
    assert arguments == {"x": 2}


# -- the staged API ----------------------------------------------------------------------------


async def test_staged_prepare_dispatch_finalize_equals_execute(ctx: Context) -> None:
    ctx.tools.register(define())
    prepared = await ctx.tools.prepare(call())
    assert prepared.kind == "dispatch" and prepared.result is None
    dispatched = await ctx.tools.dispatch(prepared)
    final = await ctx.tools.finalize(prepared, dispatched)
    assert isinstance(final, ToolSuccess) and final.value == 4

    ctx.on(TOOLS_PRE_EXECUTE, lambda e, n: Deny("no"))
    denied = await ctx.tools.prepare(call())
    assert denied.kind == "post-result"
    with pytest.raises(ValueError):
        await ctx.tools.dispatch(denied)
    assert (await ctx.tools.finalize(denied)).content == (TextBlock("Error: no"),)


async def test_bodies_overlap_when_dispatched_concurrently(ctx: Context) -> None:
    gate, all_running = asyncio.Event(), asyncio.Event()
    running: list[int] = []

    async def body(args: Any, run: ToolRunContext) -> int:
        running.append(args["x"])
        if len(running) == 3:
            all_running.set()
        await gate.wait()
        return args["x"]

    ctx.tools.register(define(body=body))
    prepared = [await ctx.tools.prepare(call(args={"x": i})) for i in range(3)]
    tasks = [asyncio.ensure_future(ctx.tools.dispatch(p)) for p in prepared]
    await all_running.wait()  # all three bodies are in flight at once
    gate.set()
    results = [await ctx.tools.finalize(p, await t) for p, t in zip(prepared, tasks, strict=True)]
    assert [r.value for r in results if isinstance(r, ToolSuccess)] == [0, 1, 2]


async def test_allow_is_the_default_decision(ctx: Context) -> None:
    decisions: list[PreDecision] = []

    async def spy(exec: ToolExecution, next: Next[ToolExecution, PreDecision]) -> PreDecision:
        decision = await next()
        decisions.append(decision)
        return decision

    ctx.tools.register(define())
    ctx.on(TOOLS_PRE_EXECUTE, spy)
    await ctx.tools.execute(call())
    assert decisions == [Allow()]


async def test_pre_execute_may_replace_the_arguments(ctx: Context) -> None:
    approval = FakeApproval(Decision.once())
    ctx.provide(APPROVAL, approval)
    ctx.tools.register(define())
    seen: list[Any] = []

    async def rewrite(exec: ToolExecution, next: Next[ToolExecution, PreDecision]) -> PreDecision:
        await next()
        return Ask("check the new x", {"x": 21})

    ctx.on(TOOLS_PRE_EXECUTE, rewrite)
    ctx.on(TOOLS_RESULT, lambda outcome: seen.append(outcome.exec.arguments))
    result = await ctx.tools.execute(call(agent=Agent()))
    assert isinstance(result, ToolSuccess) and result.value == 42
    assert [exec.arguments for exec, _ in approval.asked] == [{"x": 21}]  # asked about the new
    assert seen == [{"x": 21}]


async def test_replacement_arguments_must_be_lossless_json(ctx: Context) -> None:
    ctx.tools.register(define())

    async def rewrite(exec: ToolExecution, next: Next[ToolExecution, PreDecision]) -> PreDecision:
        return Allow({"x": float("nan")})

    ctx.on(TOOLS_PRE_EXECUTE, rewrite)
    result = await ctx.tools.execute(call())
    assert result.is_error and "not lossless JSON" in text(result)


def test_stricter_keeps_replacement_arguments_unless_denied() -> None:
    from dsh.tools import stricter

    assert stricter(Ask("policy"), Allow({"x": 1})) == Ask("policy", {"x": 1})
    assert stricter(Allow(), Ask("hook", {"x": 1})) == Ask("hook", {"x": 1})
    assert stricter(Deny("no"), Allow({"x": 1})) == Deny("no")
    assert stricter(Ask("a"), Ask("b")) == Ask("b")  # a tie: the other listener's reason


SECRET_NAME, SECRET = "DSH_TEST_PIPELINE_KEY", "sk-pipeline-abcdefghijklmnop"


@pytest.mark.parametrize("where", ["content", "meta", "value", "key", "context", "error", "none"])
def test_a_result_is_masked_wherever_a_credential_is(
    where: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dsh.tools._pipeline import _redacted

    monkeypatch.setenv(SECRET_NAME, SECRET)
    assert read_secret(SECRET_NAME) == SECRET
    try:
        text = f"key {SECRET} here"

        def at(place: str, default: str = "plain") -> str:
            return text if where == place else default

        content = (TextBlock(at("content")),)
        meta: Any = {"nested": [at("meta")], at("key", "k"): 1}
        contexts = (user_message(at("context")),)
        result: Any = (
            ToolFailure(ToolErrorInfo(at("error")), content, meta, contexts)
            if where == "error"
            else ToolSuccess({"v": [at("value")]}, content, meta, contexts)
        )
        masked = _redacted(result)
        if where == "none":
            assert masked is result  # nothing held a credential: nothing copied
        else:
            assert SECRET not in repr(masked) and "[redacted DSH_TEST_PIPELINE_KEY]" in repr(masked)
    finally:
        monkeypatch.delenv(SECRET_NAME)
        read_secret(SECRET_NAME)
