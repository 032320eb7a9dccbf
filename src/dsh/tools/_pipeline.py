"""The guarded execution pipeline (SPEC §3.3), in the three stages the loop overlaps:

`prepare` (materialize, pre-execute, approval, guards) → `dispatch` (`tools/execute` around
the body, output validation, render) → `finalize` (post-execute, `finalize_content`,
`tools/result`). No stage raises for a tool's or a listener's failure: failures become
results whose content is `Error: <message>`.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

from msgspec.structs import replace

from ..events import ToolProgressEvent
from ..kernel import (
    Aborted,
    CancelSignal,
    Owner,
    holds_secrets,
    json_holds_secrets,
    redact_secrets,
)
from ..llm import ContentBlock, Json, Message, TextBlock, blocks_from_json, clean_json, expect
from ..session._json import LosslessJsonError, freeze_json
from ._events import TOOLS_EXECUTE, TOOLS_POST_EXECUTE, TOOLS_PRE_EXECUTE, TOOLS_RESULT
from ._progress import TOOL_PROGRESS_EVENT, ProgressFeed, ToolProgress
from ._schema import validate_value
from ._types import (
    APPROVAL,
    Accept,
    Allow,
    Ask,
    Block,
    Decision,
    Deny,
    PostDecision,
    PostExecute,
    PreDecision,
    Prepared,
    RunState,
    ToolArgsError,
    ToolDefinition,
    ToolErrorInfo,
    ToolExecution,
    ToolExecutionInput,
    ToolFailure,
    ToolNotFoundError,
    ToolOutcome,
    ToolOutputError,
    ToolResult,
    ToolRunContext,
    ToolSuccess,
    as_content,
    failure,
)

if TYPE_CHECKING:
    from ..kernel import Context, EventBus
    from ._registry import ToolTable

__all__ = ["dispatch", "finalize", "prepare"]

_log = logging.getLogger("dsh.tools")

ABORTED = failure("tool call aborted", "AbortError", "ABORTED")
ABORTED_BEFORE_DISPATCH = failure(
    "tool call aborted before dispatch", "AbortError", "ABORTED_BEFORE_DISPATCH"
)
_ALLOW = Allow()
_ACCEPT = Accept()


async def _allow(_exec: ToolExecution) -> PreDecision:
    return _ALLOW


async def _accept(_payload: PostExecute) -> PostDecision:
    return _ACCEPT


def error_result(exc: BaseException) -> ToolFailure:
    """`Error: <message>`, with the error's class name and its `code` attribute, if a str."""
    code = getattr(exc, "code", None)
    return failure(
        str(exc) or type(exc).__name__, type(exc).__name__, code if isinstance(code, str) else None
    )


def _cancelled(run: RunState, prior: ToolResult) -> ToolFailure:
    base = ABORTED if run.body_invoked else ABORTED_BEFORE_DISPATCH
    if prior.additional_contexts:
        return replace(base, additional_contexts=prior.additional_contexts)
    return base


def _contexts(messages: Sequence[Message]) -> tuple[Message, ...]:
    out = tuple(messages)
    for message in out:
        if not isinstance(message, Message) or message.role != "user":
            raise TypeError(f"additional contexts must be user-role Messages, got {message!r}")
    return out


def _state(exec: ToolRunContext) -> RunState:
    state = exec._state
    if state is None:
        raise ValueError("this execution was not prepared by ToolRuntime.prepare()")
    return state


# -- prepare -----------------------------------------------------------------------------------


async def prepare(
    table: ToolTable, bus: EventBus, ctx: Context, input: ToolExecutionInput
) -> Prepared:
    definition = table.get(input.name, input.agent)
    finalize = None if definition is None else definition.finalize_content
    run = RunState(input.signal, finalize, _progress_opener(bus, time.monotonic()))
    try:
        arguments = freeze_json(input.arguments, "arguments")
        invalid: LosslessJsonError | None = None
    except LosslessJsonError as exc:
        arguments, invalid = None, exc
    exec = ToolRunContext(
        input.call_id,
        input.name,
        arguments,
        input.signal,
        input.agent,
        input.root_call_id or input.call_id,
        input.parent,
        object(),
        run,
    )
    if invalid is not None:
        return Prepared(
            exec,
            "final-result",
            failure(f"invalid arguments: {invalid}", "ToolArgsError", "INVALID_ARGS"),
        )
    if input.signal.aborted:
        return Prepared(exec, "final-result", ABORTED_BEFORE_DISPATCH)
    asked = False
    try:
        decision = await bus.waterfall(TOOLS_PRE_EXECUTE, exec, _allow, exec.agent)
        if isinstance(decision, Allow | Ask) and decision.arguments is not None:
            exec = replace(exec, arguments=freeze_json(dict(decision.arguments), "arguments"))
        if isinstance(decision, Allow):
            reason = table.guard_reason(exec)
        elif isinstance(decision, Deny):
            reason = decision.reason
        elif isinstance(decision, Ask):
            unfit = _unfit_arguments(table, exec)
            if unfit is not None:  # nobody is asked about a call that cannot run
                return Prepared(exec, "post-result", error_result(unfit))
            asked = True
            reason = await _ask(ctx, exec, decision)
            if reason is None:
                reason = table.guard_reason(exec)
        else:
            raise TypeError(
                f"a tools/pre-execute listener returned {decision!r}, not Allow, Deny or Ask"
            )
    except Exception as exc:
        return Prepared(exec, "final-result", error_result(exc))
    # A denial that answered a cancelled approval prompt is the cancellation, not a "no".
    if input.signal.aborted and (reason is None or asked):
        return Prepared(exec, "post-result", ABORTED_BEFORE_DISPATCH)
    if reason is not None:
        return Prepared(exec, "post-result", failure(reason))
    return Prepared(exec, "dispatch")


def _progress_opener(bus: EventBus, started: float) -> Callable[[ToolExecution], ProgressFeed]:
    """Opens a call's progress feed, which emits `tool/progress` scoped by its agent."""
    loop = asyncio.get_running_loop()

    def open_feed(exec: ToolExecution) -> ProgressFeed:
        session = exec.session

        def emit(event: ToolProgressEvent) -> None:
            bus.emit(TOOL_PROGRESS_EVENT, ToolProgress(session, event), exec.agent)

        return ProgressFeed(exec.call_id, exec.name, started, emit, loop)

    return open_feed


def _unfit_arguments(table: ToolTable, exec: ToolExecution) -> ToolArgsError | None:
    """The error the body's own check would give the call's arguments, if any."""
    definition = table.get(exec.name, exec.agent)
    if definition is None:
        return None  # dispatch answers UNKNOWN_TOOL (a wrapper may still serve the name)
    violations = validate_value(definition.parameters, exec.arguments, "")
    return ToolArgsError(violations) if violations else None


async def _ask(ctx: Context, exec: ToolExecution, ask: Ask) -> str | None:
    """None if approved, else the denial reason."""
    approval = ctx.get(APPROVAL)
    tool = f'tool "{exec.name}" requires approval'
    if ask.reason:
        tool += f" ({ask.reason})"
    if approval is None:
        return f"{tool}, but no approval service is available"
    if exec.agent is None:
        return f"{tool}, but the call has no agent to route it through"
    decision = await approval.request(exec, ask.reason)
    if not isinstance(decision, Decision):
        raise TypeError(f"the approval service answered {decision!r}, not a Decision")
    if decision.allowed:
        return None
    rejected = f'the user rejected tool "{exec.name}"'
    return f"{rejected}: {decision.reason}" if decision.reason else rejected


# -- dispatch ----------------------------------------------------------------------------------


async def dispatch(
    table: ToolTable, bus: EventBus, prepared: Prepared, grace_s: float
) -> ToolResult:
    if prepared.kind != "dispatch":
        raise ValueError(f"a {prepared.kind} preparation has nothing to dispatch")
    exec = prepared.exec
    run = _state(exec)

    async def body(view: ToolExecution) -> ToolResult:
        result = await _run_body(table, exec, run, view.signal, grace_s)
        run.dispatched = result
        return result

    try:
        result = await bus.waterfall(TOOLS_EXECUTE, exec, body, exec.agent)
        if result is not run.dispatched:
            result = _normalize(table, exec, run, result)
    except Exception as exc:
        result = error_result(exc)
    finally:
        if run.feed is not None:
            run.feed.close()  # the result follows: what is pending is not shown
    if run.deferred:
        result = replace(result, additional_contexts=(*run.deferred, *result.additional_contexts))
    if not result.is_error and run.caller.aborted:
        return _cancelled(run, result)
    return result


async def _run_body(
    table: ToolTable, exec: ToolRunContext, run: RunState, signal: CancelSignal, grace_s: float
) -> ToolResult:
    caller = run.caller
    removers: tuple[Callable[[], None], ...] = ()
    if signal is not caller:
        # A wrapper swapped the signal: the body sees both, and neither leaks a callback.
        fused = CancelSignal()
        removers = (caller.add_callback(fused.abort), signal.add_callback(fused.abort))
        signal = fused
    try:
        if signal.aborted:
            return ABORTED_BEFORE_DISPATCH
        definition = table.get(exec.name, exec.agent)
        if definition is None:
            raise ToolNotFoundError(exec.name)
        violations = validate_value(definition.parameters, exec.arguments, "")
        if violations:
            raise ToolArgsError(violations)
        arguments = exec.arguments
        if not isinstance(arguments, dict):  # (the parameters' root type is object)
            raise ToolArgsError(['"arguments" must be an object'])
        run.body_invoked = True
        view = exec if signal is exec.signal else replace(exec, signal=signal)
        value: object = definition.execute(arguments, view)
        if inspect.isawaitable(value):
            work = _BODIES.spawn(_settled(value), name=f"dsh-tool:{exec.name}")
            value = await _body_value(exec, work, signal, grace_s)
        result = success(exec, definition, run, value)
        return ABORTED if signal.aborted else result
    except Aborted:
        if signal.aborted:
            return ABORTED
        raise
    except Exception as exc:
        return error_result(exc)
    finally:
        for remove in removers:
            remove()


_BODIES = Owner("tool bodies")
"""Owns every async body, and is never disposed: the call awaits its body (racing its signal),
and a body still running `grace_s` after its signal fired is abandoned — the call and its
agent's disposal stop waiting for it, nothing cancels it — and is held here until it ends."""

_Settled = tuple[bool, object]
"""A body's end: (True, its value) or (False, the exception it raised)."""


async def _settled(body: Awaitable[object]) -> _Settled:
    # A body's failure is the call's result, not a failure of the task for its owner to log.
    try:
        return True, await body
    except Exception as exc:
        return False, exc


async def _body_value(
    exec: ToolExecution, work: asyncio.Task[_Settled], signal: CancelSignal, grace_s: float
) -> object:
    """The body's value. A body still running `grace_s` after its signal fired is abandoned:
    the call ends (`Aborted`) and the body finishes in the background, logged both times."""
    try:
        ok, value = await signal.race(work, grace_s=grace_s, abandon=True)
    except Aborted:
        if not work.done():
            _abandon(exec, work, signal, grace_s)
        raise
    if not ok:
        assert isinstance(value, Exception)
        raise value  # the body's own error (its signal's Aborted too)
    return value


def _abandon(
    exec: ToolExecution, work: asyncio.Task[_Settled], signal: CancelSignal, grace_s: float
) -> None:
    tool = f'tool "{exec.name}" (call {exec.call_id})'
    _log.warning(
        "%s ignored its cancel signal (%r) for %gs: abandoned, it keeps running in the background",
        tool,
        signal.reason,
        grace_s,
    )
    since = time.monotonic()

    def finished(task: asyncio.Task[_Settled]) -> None:
        if task.cancelled():
            outcome = "was cancelled"
        elif (error := task.exception()) is not None:
            outcome = f"failed ({error!r})"
        else:
            ok, value = task.result()
            outcome = "finished" if ok else f"failed ({value!r})"
        late = time.monotonic() - since
        _log.info("abandoned %s %s %.1fs after its call ended", tool, outcome, late)

    work.add_done_callback(finished)


def success(
    exec: ToolExecution, definition: ToolDefinition, run: RunState, value: object
) -> ToolSuccess:
    """Freeze, validate and render a body's value (any failure is a `ToolOutputError`)."""
    name = definition.name
    try:
        frozen = freeze_json(value, "value")
    except LosslessJsonError as exc:
        raise ToolOutputError(name, [f"value is not lossless JSON ({exc})"]) from None
    violations = validate_value(definition.output_schema, frozen, "value")
    if violations:
        raise ToolOutputError(name, violations)
    try:
        content = as_content(definition.render(exec.arguments, frozen))
    except Exception as exc:
        raise ToolOutputError(name, [f"render failed: {exc}"]) from exc
    meta = None
    if definition.presentation_meta is not None and exec.parent is None:
        try:
            meta = freeze_json(definition.presentation_meta(exec.arguments, frozen), "meta")
        except Exception as exc:
            raise ToolOutputError(name, [f"presentation_meta failed: {exc}"]) from exc
    return ToolSuccess(frozen, content, meta, (), run.concludes)


def _normalize(table: ToolTable, exec: ToolRunContext, run: RunState, result: object) -> ToolResult:
    """A result a `tools/execute` wrapper made itself: successes are validated and rendered
    like a body's value; failures get frozen content and meta."""
    contexts_of = getattr(result, "additional_contexts", ())
    if isinstance(result, ToolFailure):
        meta = None if result.meta is None else freeze_json(result.meta, "meta")
        return ToolFailure(result.error, as_content(result.content), meta, _contexts(contexts_of))
    if isinstance(result, ToolSuccess) and result.rendered:
        meta = None if result.meta is None else freeze_json(result.meta, "meta")
        content = as_content(result.content)
        return replace(
            result, content=content, meta=meta, additional_contexts=_contexts(contexts_of)
        )
    if isinstance(result, ToolSuccess):
        definition = table.get(exec.name, exec.agent)
        if definition is None:
            raise ToolNotFoundError(exec.name)
        made = success(exec, definition, run, result.value)
        return replace(made, additional_contexts=_contexts(contexts_of))
    raise TypeError(f"a tools/execute listener returned {result!r}, not a ToolResult")


# -- finalize ----------------------------------------------------------------------------------


async def finalize(bus: EventBus, prepared: Prepared, result: ToolResult | None) -> ToolResult:
    exec = prepared.exec
    run = _state(exec)
    result = prepared.result if result is None else result
    if result is None:
        raise ValueError("finalize() of a dispatch preparation needs the dispatched result")
    if prepared.kind != "final-result":
        try:
            result = await _post_execute(bus, exec, result)
            if not result.is_error and run.caller.aborted:
                result = _cancelled(run, result)
        except Exception as exc:
            result = error_result(exc)
    if run.finalize is not None:
        try:
            content = run.finalize(exec, result)
            if content is not None:
                result = replace(result, content=as_content(content))
        except Exception as exc:
            result = error_result(exc)
    result = _redacted(_well_formed(result))
    bus.emit(TOOLS_RESULT, ToolOutcome(exec, result), exec.agent)
    return result


def _well_formed(result: ToolResult) -> ToolResult:
    """The result with its content's text cleaned: a surrogate-escaped file name or a
    plugin's lone surrogate must not break every later request of the session."""
    raw: list[Json] = [block.to_json() for block in result.content]
    cleaned = clean_json(raw)
    if cleaned is raw:
        return result
    return replace(result, content=blocks_from_json([expect(b, dict) for b in cleaned]))


def _redacted(result: ToolResult) -> ToolResult:
    """`result` with held credentials masked in all it carries: a tool that printed an API
    key sends it neither to the model nor to the log. Only what held one is rebuilt."""
    if not holds_secrets():
        return result
    changes: dict[str, Any] = {}
    content = _redact_blocks(result.content)
    if content is not result.content:
        changes["content"] = content
    meta = _redact_json(result.meta)
    if meta is not result.meta:
        changes["meta"] = meta
    contexts = tuple(_redact_context(m) for m in result.additional_contexts)
    if any(a is not b for a, b in zip(contexts, result.additional_contexts, strict=True)):
        changes["additional_contexts"] = contexts
    if isinstance(result, ToolFailure):
        message = redact_secrets(result.error.message)
        if message != result.error.message:
            changes["error"] = replace(result.error, message=message)
    else:
        value = _redact_json(result.value)
        if value is not result.value:
            changes["value"] = value
    return replace(result, **changes) if changes else result


def _redact_context(context: Message) -> Message:
    content = _redact_blocks(context.content)
    return context if content is context.content else replace(context, content=content)


def _redact_blocks(blocks: tuple[ContentBlock, ...]) -> tuple[ContentBlock, ...]:
    """`blocks` with credentials masked in their text; the same tuple when none held one."""
    redacted = tuple(_redact_block(b) for b in blocks)
    return blocks if all(a is b for a, b in zip(redacted, blocks, strict=True)) else redacted


def _redact_block(block: ContentBlock) -> ContentBlock:
    if not isinstance(block, TextBlock):
        return block
    text = redact_secrets(block.text)
    return block if text == block.text else replace(block, text=text)


def _redact_json(value: Json) -> Json:
    # One pass over the value's JSON text (in C) decides; the walk below rebuilt a
    # 2,000-line `read` value string by string (~60 % of that call's CPU).
    if not json_holds_secrets(json.dumps(value, ensure_ascii=False)):
        return value

    def walk(item: Json) -> Json:
        if isinstance(item, str):
            return redact_secrets(item)
        if isinstance(item, dict):
            return {redact_secrets(k): walk(v) for k, v in item.items()}
        if isinstance(item, list):
            return [walk(v) for v in item]
        return item

    walked = walk(value)
    return value if walked == value else freeze_json(walked, "value")


async def _post_execute(bus: EventBus, exec: ToolExecution, result: ToolResult) -> ToolResult:
    decision = await bus.waterfall(
        TOOLS_POST_EXECUTE, PostExecute(exec, result), _accept, exec.agent
    )
    if isinstance(decision, Accept):
        if decision.content is None and not decision.additional_contexts:
            return result
        content = result.content if decision.content is None else as_content(decision.content)
        contexts = (*result.additional_contexts, *_contexts(decision.additional_contexts))
        return replace(result, content=content, additional_contexts=contexts)
    if isinstance(decision, Block):
        feedback = as_content(decision.feedback)
        return ToolFailure(
            ToolErrorInfo(_feedback_message(feedback)),
            feedback,
            None,
            _contexts(decision.additional_contexts),
        )
    raise TypeError(f"a tools/post-execute listener returned {decision!r}, not Accept or Block")


def _feedback_message(blocks: Sequence[ContentBlock]) -> str:
    text = "\n".join(b.text if isinstance(b, TextBlock) else f"[{b.type} content]" for b in blocks)
    return text or "tool result blocked by post-execute policy"
