"""`ToolRuntime`: the scoped tool registry and the entry points of the pipeline."""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Literal

from ..kernel import Disposer, ServiceKey
from ..llm import ToolSchema
from ..prompt import ToolSchemaSet
from ._events import TOOLS_CHANGE
from ._pipeline import dispatch as _dispatch
from ._pipeline import finalize as _finalize
from ._pipeline import prepare as _prepare
from ._registry import Guard, Restriction, ToolTable
from ._types import (
    RESERVED_TOOL_NAMES,
    Prepared,
    ToolDefinition,
    ToolExecution,
    ToolExecutionInput,
    ToolResult,
)

if TYPE_CHECKING:
    from ..kernel import Context, EventBus
    from ..prompt import AssembleContext, ToolSchemaSet

__all__ = ["ExecutionMode", "ToolRuntime"]

ExecutionMode = Literal["parallel", "exclusive"]


DEFAULT_CANCEL_GRACE_S = 5.0


class _Shared:
    __slots__ = ("bus", "cancel_grace_s", "latest", "offers", "schemas", "table", "version")

    def __init__(self, bus: EventBus, cancel_grace_s: float) -> None:
        self.bus = bus
        self.table = ToolTable()
        self.cancel_grace_s = cancel_grace_s
        self.schemas: dict[str, tuple[ToolDefinition, ToolSchema]] = {}
        """By tool name: the schema of the definition last seen under it. Every request
        then offers the same schema objects, which encoders cache by identity."""
        self.version = 0
        """Counts the table's changes of tools and restrictions (each emits `tools/change`)."""
        self.offers: weakref.WeakKeyDictionary[
            object, tuple[int, weakref.ref[object], ToolSchemaSet]
        ] = weakref.WeakKeyDictionary()
        """By scope (weakly: a disposed agent's goes with it): the last offer made to it and
        the version it was made at. One per scope, as concurrent agents (a batch) take turns;
        the scope's weak reference is kept too, to compare scopes by identity."""
        self.latest: tuple[int, ToolSchemaSet] | None = None
        """The offer made last, and its version: another scope that sees the same tools gets
        the same object (a thousand agents hold one offer, not a thousand)."""

    def offer(self, schemas: tuple[ToolSchema, ...]) -> ToolSchemaSet:
        """The offer of `schemas`: the latest one when it is of these schemas at this version."""
        latest = self.latest
        if latest is not None and latest[0] == self.version and latest[1].schemas == schemas:
            return latest[1]  # (the schemas are shared objects: compared by identity first)
        offer = ToolSchemaSet(schemas, self.table.known_names())
        self.latest = (self.version, offer)
        return offer

    def schema_of(self, definition: ToolDefinition) -> ToolSchema:
        known = self.schemas.get(definition.name)
        if known is None or known[0] is not definition:
            schema = ToolSchema(definition.name, definition.description, definition.parameters)
            known = self.schemas[definition.name] = (definition, schema)
        return known[1]


class ToolRuntime:
    """The tool registry (`ctx.tools`) and its guarded execution pipeline.

    Bound per context: `register`, `restrict` and `guard` are owned by the calling
    context's owner and layered by its scope (None = the global layer). A scoped tool
    shadows a global one of the same name for that scope and the scopes below it.
    """

    __slots__ = ("_ctx", "_shared")

    def __init__(
        self,
        ctx: Context,
        _shared: _Shared | None = None,
        *,
        cancel_grace_s: float = DEFAULT_CANCEL_GRACE_S,
    ) -> None:
        self._ctx = ctx
        self._shared = _shared or _Shared(ctx.bus, cancel_grace_s)

    def bind_context(self, ctx: Context) -> ToolRuntime:
        return ToolRuntime(ctx, self._shared)

    def _changed(self) -> None:
        self._shared.version += 1
        self._shared.bus.emit(TOOLS_CHANGE, None)

    def _own(self, remove: Callable[[], None]) -> Disposer:
        def teardown() -> None:
            remove()
            self._changed()

        self._changed()
        return self._ctx.owner.effect(teardown)

    # -- registration ----------------------------------------------------------------------

    def register(self, definition: ToolDefinition) -> Disposer:
        """Add a tool to the calling context's layer. A duplicate name in that layer raises
        `DuplicateEntryError`; `run_code` is reserved."""
        if not isinstance(definition, ToolDefinition):
            raise TypeError(
                "register() takes a ToolDefinition (decorate functions with @tool), "
                f"got {definition!r}"
            )
        if definition.name in RESERVED_TOOL_NAMES:
            raise ValueError(f'tool name "{definition.name}" is reserved')
        ctx = self._ctx
        ctx.owner.check_active()
        return self._own(self._shared.table.add(ctx.scope, definition))

    def restrict(
        self, *, allow: Iterable[str] | None = None, deny: Iterable[str] | None = None
    ) -> Disposer:
        """Mask the global tools the calling scope inherits: keep only `allow`, drop `deny`.

        Scoped contexts only. Masks intersect (also with those of ancestor scopes); the
        scope's own registrations are exempt. Unknown names or an empty filter raise.
        """
        scope = self._ctx.scope
        if scope is None:
            raise ValueError(
                "tools.restrict() needs a scoped context (agent.ctx): a global mask would hide "
                "the tools from every agent"
            )
        if allow is None and deny is None:
            raise ValueError("tools.restrict() needs allow= and/or deny=")
        if isinstance(allow, str) or isinstance(deny, str):
            raise TypeError("allow= and deny= take collections of tool names, not a str")
        allowed = None if allow is None else frozenset(allow)
        denied = None if deny is None else frozenset(deny)
        named = (allowed or frozenset()) | (denied or frozenset())
        known = self._shared.table.global_
        unknown = sorted(n for n in named if n not in known or n in RESERVED_TOOL_NAMES)
        if unknown:
            listed = ", ".join(f'"{n}"' for n in unknown)
            raise ValueError(
                f"tools.restrict() names unknown global tools {listed}; known global tools: "
                + (", ".join(sorted(known)) or "(none)")
            )
        self._ctx.owner.check_active()
        return self._own(self._shared.table.add_restriction(scope, Restriction(allowed, denied)))

    def guard(self, guard: Guard) -> Disposer:
        """Add a monotonic check run after `tools/pre-execute` allowed a call: a returned
        str denies it; nothing can re-allow it. Global, or for the calling scope's agent."""
        ctx = self._ctx
        ctx.owner.check_active()
        return ctx.owner.effect(self._shared.table.add_guard(ctx.scope, guard))

    # -- lookup ----------------------------------------------------------------------------

    def get(self, name: str, scope: object | None = None) -> ToolDefinition | None:
        """The tool `scope` sees under `name` (a restricted-away global reads as absent)."""
        return self._shared.table.get(name, scope)

    def schemas(self, scope: object | None = None) -> tuple[ToolSchema, ...]:
        """What the model is told about the tools `scope` sees, sorted by name."""
        visible = self._shared.table.visible(scope)
        return tuple(self._shared.schema_of(d) for _, d in sorted(visible.items()))

    def known_names(self) -> frozenset[str]:
        """Every registered tool name, of any scope (restricted or not)."""
        return self._shared.table.known_names()

    def tool_schema_set(self, context: AssembleContext) -> ToolSchemaSet:
        """The system prompt's tool-schema provider (registered by `ToolsPlugin`): the same
        offer as the last assembly's while no tool or restriction changed and the scope is
        the same (every step would otherwise sort and rebuild it)."""

        shared, scope = self._shared, context.scope
        key = _UNSCOPED if scope is None else scope
        try:
            last = shared.offers.get(key)
        except TypeError:  # a scope that cannot be weakly referenced (a str): not kept
            return shared.offer(self.schemas(scope))
        if last is not None and last[0] == shared.version and last[1]() is key:
            return last[2]
        offer = shared.offer(self.schemas(scope))
        shared.offers[key] = (shared.version, weakref.ref(key), offer)
        return offer

    def execution_mode(self, exec: ToolExecutionInput | ToolExecution) -> ExecutionMode:
        """`parallel` only when the visible tool's `is_concurrency_safe(args)` is exactly True."""
        definition = self._shared.table.get(exec.name, exec.agent)
        if definition is None or definition.is_concurrency_safe is None:
            return "exclusive"
        try:
            safe = definition.is_concurrency_safe(exec.arguments)
        except Exception:
            return "exclusive"
        return "parallel" if safe is True else "exclusive"

    # -- execution -------------------------------------------------------------------------

    async def execute(self, input: ToolExecutionInput) -> ToolResult:
        """Run one call through the whole pipeline. Never raises for tool or listener
        failures: they become failures rendered `Error: <message>`."""
        prepared = await self.prepare(input)
        result = await self.dispatch(prepared) if prepared.kind == "dispatch" else None
        return await self.finalize(prepared, result)

    async def prepare(self, input: ToolExecutionInput) -> Prepared:
        """Materialize the call, run `tools/pre-execute`, approval and guards, in order.
        `Prepared.kind` says what follows: `dispatch`, or a decided `post-result` (still
        post-executed) or `final-result` (not)."""
        shared = self._shared
        return await _prepare(shared.table, shared.bus, self._ctx, input)

    async def dispatch(self, prepared: Prepared) -> ToolResult:
        """Run `tools/execute` around the body; validate and render its value. A body that
        ignores its fired signal for the cancel grace period is abandoned (`ABORTED`)."""
        shared = self._shared
        return await _dispatch(shared.table, shared.bus, prepared, shared.cancel_grace_s)

    async def finalize(self, prepared: Prepared, result: ToolResult | None = None) -> ToolResult:
        """Post-execute (unless the preparation is final), `finalize_content`, then emit
        `tools/result`. `result` defaults to the preparation's own."""
        return await _finalize(self._shared.bus, prepared, result)

    def __repr__(self) -> str:
        return f"<ToolRuntime tools={len(self._shared.table.global_)} scope={self._ctx.scope!r}>"


TOOLS: ServiceKey[ToolRuntime] = ServiceKey("tools")
"""The key `ctx.tools` reads: `ctx.require(TOOLS)` below the `dsh.Context` layer."""


class _Unscoped:
    """The key of the offer made without a scope (None cannot be weakly referenced)."""


_UNSCOPED = _Unscoped()
