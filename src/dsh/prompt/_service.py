"""`SystemPrompt`: scoped registries of prompt parts, and their assembly."""

from __future__ import annotations

import inspect
import itertools
import math
import operator
from collections.abc import Callable, Iterable, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Self, TypeVar

import msgspec
from msgspec.structs import replace

from ..kernel import Disposer, EventBus, ScopedLayers, ServiceKey, scope_chain
from ..session import FrozenDict
from ._events import SYSTEM_PROMPT_ASSEMBLE, SYSTEM_PROMPT_CHANGE
from ._render import VARIABLE_NAME
from ._tool_order import canonical_tools, check_tool_order
from ._values import (
    AssembleContext,
    AssemblePayload,
    NamedText,
    PromptAssembly,
    PromptAssemblyError,
    TextSource,
    ToolSchemaSet,
    ToolsProvider,
    VariableProvider,
)

if TYPE_CHECKING:
    from ..kernel import Context
    from ..llm import ToolSchema

__all__ = ["SystemPrompt"]

T = TypeVar("T")


# Entries compare by identity: a remover must never take out a later re-registration.
class _Part(msgspec.Struct, frozen=True, eq=False):
    name: str
    order: float
    text: TextSource
    complete: bool
    seq: int
    fixed: NamedText | None
    """The evaluated part of a plain-text `text`, made once (assemblies share it)."""


class _Variable(msgspec.Struct, frozen=True, eq=False):
    provider: VariableProvider


class _Tools(msgspec.Struct, frozen=True, eq=False):
    provider: ToolsProvider


class _State:
    """What every bound view of one service shares."""

    __slots__ = (
        "bus",
        "contexts",
        "offered_tools",
        "offers",
        "sections",
        "seq",
        "suppressors",
        "tool_order",
        "tools",
        "variables",
    )

    def __init__(self, bus: EventBus, tool_order: tuple[str, ...] | None) -> None:
        self.bus = bus
        self.tool_order = tool_order
        self.sections: ScopedLayers[_Part] = ScopedLayers()
        self.contexts: ScopedLayers[_Part] = ScopedLayers()
        self.variables: ScopedLayers[_Variable] = ScopedLayers()
        self.tools: ScopedLayers[_Tools] = ScopedLayers()
        self.suppressors: dict[object | None, int] = {}
        self.seq = itertools.count()
        self.offers: list[ToolSchemaSet] | None = None
        self.offered_tools: tuple[ToolSchema, ...] = ()

    def canonical(self, offers: list[ToolSchemaSet]) -> tuple[ToolSchema, ...]:
        """`canonical_tools(offers)`: the last result again for equal offers (providers
        that change nothing offer the same objects) when all its schemas are frozen, so no
        waterfall listener can have changed one it shares."""
        if offers == self.offers:
            return self.offered_tools
        tools = canonical_tools(offers, self.tool_order)
        shared = all(type(t.parameters) is FrozenDict for t in tools)
        self.offers, self.offered_tools = (offers, tools) if shared else (None, ())
        return tools

    def changed(self) -> None:
        self.bus.emit(SYSTEM_PROMPT_CHANGE, None)

    def suppressed(self, scope: object | None) -> bool:
        counts = self.suppressors
        if not counts:
            return False
        return None in counts or any(key in counts for key in scope_chain(scope))


class SystemPrompt:
    """The system prompt service (`ctx.system_prompt`).

    Holds sections (the system prompt), runtime contexts (sent as a user message by the
    loop), tool-schema providers and variables, each in a global layer plus one layer per
    scope. Every registration is owned by the calling context and goes to its scope's layer;
    a scoped entry shadows a global one of the same name for that scope. `assemble()`
    evaluates everything for one scope.
    """

    __slots__ = ("_ctx", "_state")

    def __init__(self, ctx: Context, *, tool_order: Sequence[str] | None = None) -> None:
        self._ctx = ctx
        order = None if tool_order is None else check_tool_order(tool_order)
        self._state = _State(ctx.bus, order)

    def bind_context(self, ctx: Context) -> Self:
        """A view of this service whose registrations belong to `ctx` (owner and scope)."""
        view = object.__new__(type(self))
        view._ctx = ctx
        view._state = self._state
        return view

    @property
    def tool_order(self) -> tuple[str, ...] | None:
        return self._state.tool_order

    # -- registration ----------------------------------------------------------------------

    def section(
        self, name: str, order: float, text: TextSource, *, complete: bool = False
    ) -> Disposer:
        """Add a system prompt section.

        `order` is a finite number (bands: identity -100, persona 0, tool guidance 100-199);
        ties keep registration order. `text` is a template or a function of the
        `AssembleContext` (sync or async) returning one. A `complete` section, when it is the
        only effective one, becomes the whole prompt.
        """
        part = _part(name, order, text, complete, next(self._state.seq))
        return self._register(self._state.sections, name, part)

    def context(self, name: str, order: float, text: TextSource) -> Disposer:
        """Add a runtime context: dynamic text the loop sends as a user message when it
        changes, instead of putting it in the (cached) system prompt."""
        part = _part(name, order, text, False, next(self._state.seq))
        return self._register(self._state.contexts, name, part)

    def suppress_runtime_context(self) -> Disposer:
        """Drop every runtime context from assemblies for this context's scope (and the
        scopes below it) while the suppressor lives. Suppressors are counted."""
        owner = self._ctx.owner
        owner.check_active()
        state = self._state
        key = self._ctx.scope
        state.suppressors[key] = state.suppressors.get(key, 0) + 1

        def release() -> None:
            left = state.suppressors[key] - 1
            if left:
                state.suppressors[key] = left
            else:
                del state.suppressors[key]
            state.changed()

        disposer = owner.effect(release)
        state.changed()
        return disposer

    def tools(self, provider: ToolsProvider) -> Disposer:
        """Add a tool-schema provider, called with the `AssembleContext` of each assembly."""
        if not callable(provider):
            raise TypeError("a tool-schema provider must be callable")
        return self._register(self._state.tools, f"#{next(self._state.seq)}", _Tools(provider))

    def variable(self, name: str, provider: VariableProvider) -> Disposer:
        """Add the variable `{{name}}`; `provider` returns its value for an assembly, or None
        when it has none (rendering a section that uses it then fails)."""
        if not isinstance(name, str) or VARIABLE_NAME.match(name) is None:
            raise ValueError(f"invalid prompt variable name {name!r}: use [a-z][a-z0-9_]*")
        if not callable(provider):
            raise TypeError(f"the provider of prompt variable {name!r} must be callable")
        return self._register(self._state.variables, name, _Variable(provider))

    def _register(self, layers: ScopedLayers[T], name: str, entry: T) -> Disposer:
        owner = self._ctx.owner
        owner.check_active()
        state = self._state
        remove = layers.add(self._ctx.scope, name, entry)

        def unregister() -> None:
            remove()
            state.changed()

        try:
            disposer = owner.effect(unregister)
        except BaseException:
            remove()
            raise
        state.changed()
        return disposer

    # -- assembly --------------------------------------------------------------------------

    async def assemble(self, context: AssembleContext | None = None) -> PromptAssembly:
        """Evaluate the prompt for `context.scope` (default: this view's scope).

        Runs `system-prompt/assemble` over the evaluated assembly, then re-imposes the
        effective complete section and context suppression. Raises `PromptAssemblyError`
        for two complete sections, unknown `tool_order` names, duplicate tools or providers
        returning the wrong type; a provider's own exception propagates.
        """
        actx = context if context is not None else AssembleContext(scope=self._ctx.scope)
        state = self._state
        scope = actx.scope
        signal = actx.signal
        if signal is not None:
            signal.raise_if_aborted()

        parts = _ordered(state.sections.items(scope).values())
        complete = [p for p in parts if p.complete]
        if len(complete) > 1:
            names = ", ".join(f'"{p.name}"' for p in complete)
            raise PromptAssemblyError(
                f"more than one complete section is in effect ({names}); keep at most one"
            )
        if complete:
            parts = complete
        suppressed = state.suppressed(scope)
        context_parts = () if suppressed else _ordered(state.contexts.items(scope).values())

        sections = await _evaluate_parts(parts, actx, "section")
        contexts = await _evaluate_parts(context_parts, actx, "context")
        variables = await _evaluate_variables(state.variables.items(scope), actx)
        offers = await _evaluate_offers(state.tools.items(scope).values(), actx)
        assembly = PromptAssembly(
            sections=sections,
            contexts=contexts,
            tools=state.canonical(offers),
            variables=MappingProxyType(variables),
        )

        if signal is not None:
            signal.raise_if_aborted()
        result = await self._ctx.bus.waterfall(
            SYSTEM_PROMPT_ASSEMBLE, AssemblePayload(assembly, actx), _unchanged, scope
        )
        if not isinstance(result, PromptAssembly):
            raise PromptAssemblyError(
                f"a system-prompt/assemble listener returned {type(result).__name__}, "
                "not a PromptAssembly"
            )
        if complete and result.sections != sections:
            result = replace(result, sections=sections)
        if suppressed and result.contexts:
            result = replace(result, contexts=())
        return result


SYSTEM_PROMPT: ServiceKey[SystemPrompt] = ServiceKey("system_prompt")
"""The key `ctx.system_prompt` reads: `ctx.require(SYSTEM_PROMPT)` below the `dsh.Context` layer."""


async def _unchanged(payload: AssemblePayload) -> PromptAssembly:
    return payload.assembly


def _part(name: str, order: float, text: TextSource, complete: bool, seq: int) -> _Part:
    if not isinstance(name, str) or not name:
        raise ValueError(f"a prompt part needs a non-empty name, got {name!r}")
    if isinstance(order, bool) or not isinstance(order, int | float) or not math.isfinite(order):
        raise ValueError(f"prompt part {name!r}: order must be a finite number, got {order!r}")
    if not isinstance(text, str) and not callable(text):
        raise TypeError(f"prompt part {name!r}: text must be a str or a callable")
    fixed = NamedText(name, text) if isinstance(text, str) else None
    return _Part(name, order, text, bool(complete), seq, fixed)


_PLACE = operator.attrgetter("order", "seq")


def _ordered(parts: Iterable[_Part]) -> list[_Part]:
    return sorted(parts, key=_PLACE)


# One coroutine per kind of provider, not one per provider, and text (the usual result) is
# never asked whether it is awaitable: an assembly runs at every step.
async def _evaluate(
    providers: Iterable[tuple[str, Callable[[AssembleContext], object]]],
    actx: AssembleContext,
    what: str,
    allowed: tuple[type, ...],
) -> list[Any]:
    """Each provider's value for `actx`, in order. `what` (a format of the provider's name)
    names it in the note added to its own exception, and in the error for a value that is
    not of an `allowed` type."""
    values: list[object] = []
    for name, provider in providers:
        try:
            value = provider(actx)
            if type(value) is not str and inspect.isawaitable(value):
                value = await value
        except Exception as exc:
            exc.add_note("while evaluating " + what.format(name))
            raise
        if not isinstance(value, allowed):
            expected = " or ".join("None" if t is _NONE else t.__name__ for t in allowed)
            raise PromptAssemblyError(
                f"{what.format(name)} is {type(value).__name__}, not {expected}"
            )
        values.append(value)
    return values


_NONE = type(None)


async def _evaluate_parts(
    parts: Sequence[_Part], actx: AssembleContext, kind: str
) -> tuple[NamedText, ...]:
    dynamic = [(p.name, p.text) for p in parts if not isinstance(p.text, str)]
    if not dynamic:
        return tuple([p.fixed for p in parts if p.fixed is not None])
    texts = iter(await _evaluate(dynamic, actx, f'the text of {kind} "{{}}"', (str,)))
    return tuple([p.fixed or NamedText(p.name, next(texts)) for p in parts])


async def _evaluate_variables(
    variables: dict[str, _Variable], actx: AssembleContext
) -> dict[str, str | None]:
    providers = [(name, v.provider) for name, v in sorted(variables.items())]
    values = await _evaluate(providers, actx, 'prompt variable "{}"', (str, _NONE))
    return dict(zip([name for name, _ in providers], values, strict=True))


async def _evaluate_offers(
    providers: Iterable[_Tools], actx: AssembleContext
) -> list[ToolSchemaSet]:
    offers: list[ToolSchemaSet] = []
    for tools in providers:
        offer = tools.provider(actx)
        if inspect.isawaitable(offer):
            offer = await offer
        if not isinstance(offer, ToolSchemaSet):
            raise PromptAssemblyError(
                f"a tool-schema provider returned {type(offer).__name__}, not a ToolSchemaSet"
            )
        offers.append(offer)
    return offers
