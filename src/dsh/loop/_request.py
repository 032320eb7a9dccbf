"""Request construction: the call config, the logged request header and route, the request."""

from __future__ import annotations

from typing import TYPE_CHECKING

from msgspec.structs import replace

from ..agent import REQUEST, StepPoint
from ..events import (
    ModelSwitchEvent,
    RequestContextEvent,
    RequestHeaderEvent,
    SystemMessageEvent,
    append,
    typed_as,
)
from ..llm import (
    LLM,
    AdapterDefaults,
    GenerateOptions,
    HarnessError,
    Json,
    LlmCallConfig,
    LlmError,
    PreparedCall,
    new_message_id,
)
from ..session import EpochHeader, ReplaceOp, SurfaceOp

if TYPE_CHECKING:
    from ..prompt import PromptAssembly
    from ._activity import Activity
    from ._deps import TurnDeps


class RequestBuilder:
    """Builds each model request of one agent from the log, so that every request equals
    what the log says (SPEC §5.6). It owns the one piece of state that outlives a turn:
    whether this loop instance has logged a `request/header` yet."""

    __slots__ = ("_deps", "_header_logged", "_session")

    def __init__(self, deps: TurnDeps) -> None:
        self._deps = deps
        self._session = deps.session
        self._header_logged = False

    async def build(
        self, activity: Activity, assembly: PromptAssembly, system: str
    ) -> tuple[GenerateOptions, PreparedCall | None]:
        """The request of this attempt and its prepared call (None: no adapter serves the
        route, `llm/stream` middleware may). Logs the header and route when they change."""
        previous = self._session.request_header()
        config, prepared = await self._call_config(activity, previous)
        header = EpochHeader(
            config=config,
            adapter_defaults=prepared.adapter_defaults if prepared else AdapterDefaults(),
            # Format 4 logs the system prompt as a `system/message` instead.
            system=None if self._session.header.system_on_surface else system or None,
            tools=tuple(assembly.tools),
        )
        self._log_header(header, previous)
        self._log_route(config, prepared)
        request = config.request(
            self._session.derive_messages(),
            system=system or None,
            tools=assembly.tools,
            signal=activity.signal,
            session_id=self._session.id,
        )
        return request, prepared

    async def _call_config(
        self, activity: Activity, previous: EpochHeader | None
    ) -> tuple[LlmCallConfig, PreparedCall | None]:
        """`agent/request` over the seed config, then the adapter's defaults applied."""
        deps, signal = self._deps, activity.signal
        seed = self._seed_config(previous)

        async def terminal(payload: StepPoint) -> LlmCallConfig:
            return seed

        config = await deps.events.waterfall(
            REQUEST, StepPoint(deps.subject, activity.turn, activity.step, signal), terminal
        )
        signal.raise_if_aborted()
        if not config.provider or not config.model:
            raise HarnessError(
                f"agent {self._session.id} has no provider/model: set AgentOptions.provider and "
                "AgentOptions.model (or the profile's agent_loop defaults)",
                "NO_MODEL",
            )
        prepared: PreparedCall | None
        try:
            prepared = await deps.ctx.require(LLM).prepare_call(config, signal)
        except LlmError as exc:
            if exc.failure.code != "NO_ADAPTER":
                raise
            prepared = None  # middleware on llm/stream may still serve the route
        signal.raise_if_aborted()
        return (config if prepared is None else prepared.config), prepared

    def _seed_config(self, previous: EpochHeader | None) -> LlmCallConfig:
        """The config `agent/request` starts from: a `model/switch` logged since the last
        header (or, on a resume, the latest one); else the last logged config (less the
        adapter's defaults) once this instance logged a header; else the agent's options."""
        options, settings = self._deps.options, self._deps.settings
        switch = self._switch()
        if switch is not None:
            provider, model, effort = switch.provider, switch.model, switch.reasoning_effort
            return LlmCallConfig(provider, model, effort, max_tokens=options.max_tokens)
        if self._header_logged and previous is not None:
            config = previous.config
            defaults = previous.adapter_defaults
            if defaults.max_tokens or defaults.reasoning_effort:  # one copy for both
                config = replace(
                    config,
                    max_tokens=None if defaults.max_tokens else config.max_tokens,
                    reasoning_effort=None if defaults.reasoning_effort else config.reasoning_effort,
                )
            return config
        provider = options.provider or settings.default_provider or ""
        model = options.model or settings.default_model or ""
        effort = options.reasoning_effort
        if (
            effort is None
            and previous is not None
            and (previous.config.provider, previous.config.model) == (provider, model)
            and not previous.adapter_defaults.reasoning_effort
        ):
            effort = previous.config.reasoning_effort
        return LlmCallConfig(provider, model, effort, max_tokens=options.max_tokens)

    def _switch(self) -> ModelSwitchEvent | None:
        """The `model/switch` that decides the next request's route, if any."""
        event = self._session.model_switch()
        if event is None:
            return None
        header = self._session.latest_header_seq()
        if self._header_logged and header is not None and header > event.seq:
            return None  # the header logged since carries it (and what `agent/request` added)
        switch = typed_as(event, ModelSwitchEvent)
        if switch is None or self._deps.ctx.require(LLM).adapter_for(switch.provider) is None:
            return None  # resumed in a runtime without that route: the agent's options
        return switch

    def log_system_prompt(self, turn: int, step: int, system: str) -> None:
        """Format 4 (`SessionHeader.system_on_surface`): the system prompt is the first
        surface node, a `system/message` logged before the step's messages, and replaced
        when the prompt changes."""
        session = self._session
        if not session.header.system_on_surface or not system:
            return
        head = session.surface_head()
        if head is not None and head.type == SystemMessageEvent.type:
            if session.system_prompt() == system:
                return
            op: SurfaceOp = ReplaceOp(head.seq, head.seq)
            sources: list[int] | None = [head.seq]
        elif head is None:
            op, sources = "append", None
        else:
            return  # a surface that starts elsewhere (a fork of a format-0 log) cannot get one
        message: Json = {
            "role": "system",
            "content": [{"type": "text", "text": system}],
            "source": {"kind": "system-prompt"},
            "id": new_message_id(),
        }
        logged = SystemMessageEvent(
            turn=turn,
            step=step,
            message=message,
            surface_op=op,
            source_event_seqs=None if sources is None else tuple(sources),
        )
        append(session, logged)

    def _log_header(self, header: EpochHeader, previous: EpochHeader | None) -> None:
        """`request/header`: `initial` (or `resume`) first, then only on a `change`."""
        if not self._header_logged:
            reason = "resume" if previous is not None else "initial"
            self._header_logged = True
        elif not self._unchanged(header, previous):
            reason = "change"
        else:
            return
        logged = append(self._session, RequestHeaderEvent(header=header, reason=reason))
        self._session.know_request_header(logged, header)

    def _unchanged(self, header: EpochHeader, previous: EpochHeader | None) -> bool:
        """`header == previous`: cheap, since `previous` is the header logged here (the
        session keeps the writer's object), whose tool schemas are the offer's own objects."""
        return previous is not None and header == previous

    def _log_route(self, config: LlmCallConfig, prepared: PreparedCall | None) -> None:
        """`request/context` when the route or its context window changed."""
        window = prepared.model_info.context_window if prepared and prepared.model_info else None
        route = RequestContextEvent(
            provider=config.provider, model=config.model, context_window=window
        )
        if route.to_data() != self._session.request_context():
            append(self._session, route)
