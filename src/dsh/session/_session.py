"""`Session`: the append-only event log, its surface, and the model history derived from it."""

from __future__ import annotations

import time as _time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, overload

import msgspec

from ..event_types import (
    ASSISTANT_CHUNK,
    ASSISTANT_MESSAGE,
    DEVELOPER_MESSAGE,
    MODEL_SWITCH,
    REQUEST_CONTEXT,
    REQUEST_HEADER,
    REWIND_CONVERSATION,
    SESSION_END_SEED,
    SYSTEM_MESSAGE,
    TOOL_RESULT,
    USER_MESSAGE,
)
from ..llm import Json, Message, ToolResultBlock, expect
from ._cold import Entry, Thawer, cool
from ._envelope import InvalidEventError, ReplaceOp, SessionEvent, SurfaceOp
from ._header import EpochHeader, SessionHeader
from ._history import History
from ._json import FrozenDict, LosslessJsonError, freeze_json
from ._registry import SURFACE_TYPES, UnknownEventTypeError, _known, event_kind

__all__ = ["ReentrantAppendError", "Session", "Surface", "event_type"]

END_SEED = SESSION_END_SEED
_TRACKED = frozenset({REQUEST_HEADER, REQUEST_CONTEXT, MODEL_SWITCH})


class ReentrantAppendError(RuntimeError):
    """An append while this session's `session/event` dispatch runs. Listeners that need to
    write schedule the write (e.g. `loop.call_soon`)."""


class Surface(msgspec.Struct, frozen=True):
    """The seqs of the events that make up the model history, and how often it was rewritten."""

    nodes: tuple[int, ...]
    replace_generation: int


def _event(
    kind: str,
    seq: int,
    time: int,
    data: dict[str, Json],
    op: SurfaceOp | None,
    seqs: tuple[int, ...] | None,
    ignorable: bool | None,
) -> SessionEvent:
    return SessionEvent(kind, seq, time, data, op, seqs, ignorable)


class _EventsView(Sequence[SessionEvent]):
    """A read-only view of the log (no copy; cold chunks are made events as they are read)."""

    __slots__ = ("_events",)

    def __init__(self, events: list[Entry]) -> None:
        self._events = events

    @overload
    def __getitem__(self, index: int) -> SessionEvent: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[SessionEvent, ...]: ...
    def __getitem__(self, index: int | slice) -> SessionEvent | tuple[SessionEvent, ...]:
        events = self._events
        if isinstance(index, slice):
            thaw = Thawer()
            return tuple([thaw(events[seq], seq) for seq in range(len(events))[index]])
        entry = events[index]
        if type(entry) is SessionEvent:
            return entry
        return Thawer()(entry, index if index >= 0 else len(events) + index)

    def __len__(self) -> int:
        return len(self._events)

    def type_at(self, index: int) -> str:
        entry = self._events[index]
        return entry.type if type(entry) is SessionEvent else ASSISTANT_CHUNK

    def __iter__(self) -> Iterator[SessionEvent]:
        thaw = Thawer()
        for seq, entry in enumerate(self._events):
            yield thaw(entry, seq)

    def __reversed__(self) -> Iterator[SessionEvent]:
        events, thaw = self._events, Thawer()
        for seq in range(len(events) - 1, -1, -1):
            yield thaw(events[seq], seq)

    def __repr__(self) -> str:
        return f"<events of {len(self._events)}>"


def event_type(events: Sequence[SessionEvent], index: int) -> str:
    """`events[index].type`, without making a session's cold chunk an event again: a scan
    of a live log for some types passes over a streamed answer's chunks at the cost of a
    look, not of a decode each."""
    if isinstance(events, _EventsView):
        return events.type_at(index)
    return events[index].type


class Session:
    """One session: an append-only log of `SessionEvent`s and the history derived from it.

    Build it through `ctx.sessions` (published) or `Session.create` (detached). A seeded
    session validates the seed and starts its live part with `session/end-seed`.
    """

    __slots__ = (
        "__weakref__",
        "_derived",
        "_epoch",
        "_events",
        "_first_live_seq",
        "_header",
        "_latest",
        "_messages",
        "_nodes",
        "_publish",
        "_publishing",
        "_replace_generation",
        "_replay",
        "_surface",
        "_view",
        "rolled_back",
        "stored_from_first_turn",
    )

    def __init__(self, header: SessionHeader, seed: Sequence[SessionEvent] | None = None) -> None:
        self.rolled_back = False
        """Set by a creation that failed before the session was published for good: its
        `session/disposed` then means "never existed" (persistence stores nothing)."""
        self.stored_from_first_turn = False
        """Persistence stores a new session once its first turn starts; disposed before,
        it leaves nothing (a `dsh chat` opened and closed without a prompt)."""
        self._header = header
        self._events: list[Entry] = []
        self._view = _EventsView(self._events)
        self._nodes: list[int] = []
        self._messages: dict[int, Message | None] = {}
        """The parsed message of each surface event (None: contributes nothing)."""
        self._derived: list[Message] = []
        self._replay: frozenset[str] = frozenset()
        """Providers of history messages that carry `replayState` (adapters' fast path)."""
        self._surface: Surface | None = None
        self._replace_generation = 0
        self._latest: dict[str, SessionEvent] = {}
        self._epoch: tuple[SessionEvent, EpochHeader] | None = None
        self._publish: Callable[[SessionEvent], None] | None = None
        self._publishing = False
        self._first_live_seq = 0
        if seed is not None:
            for index, event in enumerate(seed):
                if not isinstance(event, SessionEvent):
                    raise TypeError(f"seed[{index}] is not a SessionEvent")
                if event.seq != index:
                    raise InvalidEventError(
                        f"seed[{index}] has seq {event.seq}: a seed is contiguous from 0"
                    )
                self._commit(event, self._check(event))
            self._first_live_seq = len(self._events)
            if not self._events or self._view[-1].type != END_SEED:
                self.append(END_SEED, {})

    @staticmethod
    def create(
        id: str,
        seed: Sequence[SessionEvent] | None = None,
        header: SessionHeader | None = None,
    ) -> Session:
        """A detached session (not in any store, nothing published)."""
        if header is None:
            header = SessionHeader(id=id, created_at=_now())
        elif header.id != id:
            raise ValueError(f"header id {header.id!r} differs from session id {id!r}")
        return Session(header, seed)

    # -- reading ---------------------------------------------------------------------------

    @property
    def id(self) -> str:
        return self._header.id

    @property
    def header(self) -> SessionHeader:
        return self._header

    @property
    def events(self) -> Sequence[SessionEvent]:
        """The log, read-only (a live view; slice it for a snapshot)."""
        return self._view

    @property
    def seq(self) -> int:
        """The next seq (== the number of events)."""
        return len(self._events)

    @property
    def first_live_seq(self) -> int:
        """The number of seed events: the seq of the first event appended live."""
        return self._first_live_seq

    @property
    def surface(self) -> Surface:
        surface = self._surface
        if surface is None:
            surface = self._surface = Surface(tuple(self._nodes), self._replace_generation)
        return surface

    def surface_head(self) -> SessionEvent | None:
        """The event of the first surface node (None while the surface is empty)."""
        return self._view[self._nodes[0]] if self._nodes else None

    @property
    def replace_generation(self) -> int:
        """How many surface replacements this session has seen (cheaper than `surface`)."""
        return self._replace_generation

    @property
    def attached(self) -> bool:
        """True while a store publishes this session's appends."""
        return self._publish is not None

    def request_header(self) -> EpochHeader | None:
        """The latest `request/header` snapshot, or None before the first request."""
        event = self._latest.get(REQUEST_HEADER)
        if event is None:
            return None
        cached = self._epoch
        if cached is None or cached[0] is not event:
            header = event.data.get("header")
            if not isinstance(header, Mapping):
                raise InvalidEventError(f"event {event.seq} (request/header): no header object")
            cached = self._epoch = (event, EpochHeader.from_json(header))
        return cached[1]

    def know_request_header(self, event: SessionEvent, header: EpochHeader) -> None:
        """`header` is what `event` (a `request/header` this session just logged) holds: the
        writer's own object, whose tool schemas are the registry's, not copies parsed back
        from the log by `request_header()` (a thousand sessions share one set)."""
        if self._latest.get(REQUEST_HEADER) is event:
            self._epoch = (event, header)

    def system_prompt(self) -> str | None:
        """The system prompt the log says requests carry: the latest `request/header`'s
        `system`, or (`header.system_on_surface`: format 4) the text of the `system/message`
        at the head of the surface."""
        if not self._header.system_on_surface:
            header = self.request_header()
            return None if header is None else header.system
        head = self.surface_head()
        if head is None or head.type != SYSTEM_MESSAGE:
            return None
        return Message.from_json(expect(head.data["message"], dict)).text or None

    def request_context(self) -> Mapping[str, Json] | None:
        """The latest `request/context` data (`{provider, model, contextWindow?}`), or None."""
        event = self._latest.get(REQUEST_CONTEXT)
        return None if event is None else event.data

    def latest_header_seq(self) -> int | None:
        """The seq of the latest `request/header`, or None before the first request."""
        event = self._latest.get(REQUEST_HEADER)
        return None if event is None else event.seq

    def model_switch(self) -> SessionEvent | None:
        """The latest `model/switch` event, or None when the session never switched."""
        return self._latest.get(MODEL_SWITCH)

    def derive_messages(self) -> Sequence[Message]:
        """The model history: the messages of the surface nodes, in order.

        `user/message` gives the stored message; `assistant/message` its message unless the
        content is empty; `tool/result` its message; `system/message` and
        `developer/message` nothing. Cached: a surface append extends the cache, a replace
        rebuilds it.
        """
        return History(self._derived, replay_providers=self._replay)

    def derive_event_message(self, event: SessionEvent) -> Message | None:
        """The message `event` contributes to the history, or None."""
        if event.type not in SURFACE_TYPES:
            return None
        if event.seq < len(self._events) and self._events[event.seq] is event:
            return self._messages.get(event.seq)
        return _surface_message(event.type, event.data, _where(event.type, event.seq))

    # -- appending -------------------------------------------------------------------------

    def append(
        self,
        type: str,
        data: Mapping[str, Json],
        *,
        surface_op: SurfaceOp | None = None,
        source_event_seqs: Sequence[int] | None = None,
        ignorable: bool | None = None,
    ) -> SessionEvent:
        """Validate, freeze and commit one event, then publish it (`session/event`).

        A surface op is required for `user/message`, `assistant/message` and `tool/result`
        and refused for every other type. Raises before anything is committed; listener
        failures never undo the append.
        """
        if self._publishing:
            raise ReentrantAppendError(
                f"append({type!r}) while session {self.id} publishes an event: "
                "session/event listeners must defer their writes"
            )
        data_type = data.__class__
        if data_type is not dict and data_type is not FrozenDict:
            raise LosslessJsonError("data", "an event's data must be a dict (a JSON object)")
        if (
            surface_op is None
            and source_event_seqs is None
            and type in _known
            and type != REWIND_CONVERSATION
        ):
            if type in SURFACE_TYPES:
                raise InvalidEventError(f"{type} needs a surface op ('append' or ReplaceOp)")
            # The hot path (chunks and other log-only events): nothing else to check.
            event = _event(
                type, len(self._events), _now(), freeze_json(data), None, None, ignorable
            )
            self._events.append(event)
            if type in _TRACKED:
                self._latest[type] = event
        else:
            seqs = None if source_event_seqs is None else tuple(source_event_seqs)
            event = _event(
                type, len(self._events), _now(), freeze_json(data), surface_op, seqs, ignorable
            )
            self._commit(event, self._check(event))
        publish = self._publish
        if publish is not None:
            self._publishing = True
            try:
                publish(event)
            finally:
                self._publishing = False
        return event

    def _check(self, event: SessionEvent) -> Message | None:
        """Validate `event` as the next entry; returns its message (surface events)."""
        kind = event.type
        where = _where(kind, event.seq)
        if event_kind(kind) is None:
            if not event.ignorable:
                raise UnknownEventTypeError(
                    f"{where}: unknown event type (register it with register_event_type, "
                    "or mark the event ignorable)"
                )
            return None  # inert: kept verbatim, never interpreted
        if kind == REWIND_CONVERSATION:
            _rewind_target(event, where)
        seqs = event.source_event_seqs
        if seqs is not None:
            if not seqs and kind != ASSISTANT_MESSAGE:
                raise InvalidEventError(f"{where}: only assistant/message may cite no sources")
            for source in seqs:
                if type(source) is not int or not 0 <= source < event.seq:
                    raise InvalidEventError(f"{where}: source seq {source!r} is not in the log")
        op = event.surface_op
        if kind not in SURFACE_TYPES:
            if op is not None:
                raise InvalidEventError(f"{where}: only surface events take a surface op")
            return None
        if op is None:
            raise InvalidEventError(f"{where}: a surface event needs a surface op")
        if isinstance(op, ReplaceOp):
            first, last = self._replaced_range(op, where)
            shadowed = self._nodes[first : last + 1]
            missing = set(shadowed).difference(seqs or ())
            if missing:
                raise InvalidEventError(
                    f"{where}: sourceEventSeqs must cite every replaced node; "
                    f"missing {sorted(missing)}"
                )
        elif op != "append":
            raise InvalidEventError(f"{where}: unknown surface op {op!r}")
        return _surface_message(kind, event.data, where)

    def _replaced_range(self, op: ReplaceOp, where: str) -> tuple[int, int]:
        nodes = self._nodes
        try:
            first, last = nodes.index(op.start), nodes.index(op.end)
        except ValueError:
            raise InvalidEventError(
                f"{where}: replace {op.start}..{op.end} must name current surface nodes"
            ) from None
        if first > last:
            raise InvalidEventError(f"{where}: replace start {op.start} is after end {op.end}")
        return first, last

    def _commit(self, event: SessionEvent, message: Message | None) -> None:
        self._events.append(event)
        kind = event.type
        if kind in _TRACKED:
            self._latest[kind] = event
        elif kind == ASSISTANT_MESSAGE and event.source_event_seqs:
            cool(self._events, event.source_event_seqs)
        elif kind == REWIND_CONVERSATION:
            self._nodes = self._nodes_before(_rewind_target(event, ""))
            self._rederive()
            return
        op = event.surface_op
        if op is None or kind not in SURFACE_TYPES:
            return
        self._messages[event.seq] = message
        self._surface = None
        if isinstance(op, ReplaceOp):
            first, last = self._replaced_range(op, _where(kind, event.seq))
            self._nodes[first : last + 1] = [event.seq]
            self._rederive()
        else:
            self._nodes.append(event.seq)
            if message is not None:
                self._derived.append(message)
                provider = _replay_provider(message)
                if provider is not None and provider not in self._replay:
                    self._replay = self._replay | {provider}

    def _rederive(self) -> None:
        """The history again from the nodes, after a rewrite of the surface."""
        self._surface = None
        self._replace_generation += 1
        messages = self._messages
        self._derived = [m for m in (messages[s] for s in self._nodes) if m is not None]
        self._replay = frozenset(p for m in self._derived if (p := _replay_provider(m)) is not None)

    def _nodes_before(self, end: int) -> list[int]:
        """The surface nodes as they were before event `end`: one pass over the log that
        replays the surface ops (and the earlier `rewind/conversation`s)."""
        entries = self._events[:end]
        rewinds = {
            seq: _rewind_target(e, "")
            for seq, e in enumerate(entries)
            if type(e) is SessionEvent and e.type == REWIND_CONVERSATION
        }
        targets = set(rewinds.values())
        kept: dict[int, list[int]] = {}
        nodes: list[int] = []
        for seq, entry in enumerate(entries):
            if seq in targets:
                kept[seq] = list(nodes)
            if type(entry) is not SessionEvent:
                continue
            op = entry.surface_op
            if seq in rewinds:
                nodes = list(kept.get(rewinds[seq], nodes))
            elif op is None or entry.type not in SURFACE_TYPES:
                continue
            elif isinstance(op, ReplaceOp):
                first, last = nodes.index(op.start), nodes.index(op.end)
                nodes[first : last + 1] = [seq]
            else:
                nodes.append(seq)
        return nodes

    # -- publication (installed by the store) ----------------------------------------------

    def _attach(self, publish: Callable[[SessionEvent], None]) -> None:
        if self._publish is not None:
            raise RuntimeError(f"session {self.id} is already entered in a store")
        self._publish = publish

    def _detach(self, publish: Callable[[SessionEvent], None]) -> None:
        if self._publish is publish:
            self._publish = None

    def __repr__(self) -> str:
        return f"<Session {self.id} seq={len(self._events)}>"


def _rewind_target(event: SessionEvent, where: str) -> int:
    """The seq a `rewind/conversation` takes the surface back to (before that event)."""
    target = event.data.get("toSeq")
    if type(target) is not int or not 0 <= target <= event.seq:
        raise InvalidEventError(f"{where}: toSeq must be a seq of the log, got {target!r}")
    return target


def _replay_provider(message: Message) -> str | None:
    source = message.source
    if message.role == "assistant" and "replayState" in source:
        return str(source.get("provider", ""))
    return None


def _now() -> int:
    return _time.time_ns() // 1_000_000


def _where(kind: str, seq: int) -> str:
    return f"event {seq} ({kind})"


_ROLES = {
    USER_MESSAGE: "user",
    ASSISTANT_MESSAGE: "assistant",
    TOOL_RESULT: "user",
    SYSTEM_MESSAGE: "system",
    DEVELOPER_MESSAGE: "developer",
}
_NO_HISTORY = frozenset({SYSTEM_MESSAGE, DEVELOPER_MESSAGE})
"""Surface nodes whose message stays out of the derived history (the loop sends its own
system prompt and tools)."""


def _surface_message(kind: str, data: Mapping[str, Json], where: str) -> Message | None:
    """Parse and check the message a surface event stores. None: an empty assistant turn."""
    raw: Any = data if kind == USER_MESSAGE else data.get("message")
    if not isinstance(raw, Mapping):
        raise InvalidEventError(f"{where}: no message object")
    identifier = raw.get("id")
    if type(identifier) is not str or not identifier:
        raise InvalidEventError(f"{where}: the message needs a string id")
    if raw.get("role") != _ROLES[kind]:
        raise InvalidEventError(
            f"{where}: the message role must be {_ROLES[kind]!r}, got {raw.get('role')!r}"
        )
    source = raw.get("source")
    if not isinstance(source, Mapping) or type(source.get("kind")) is not str:
        raise InvalidEventError(f"{where}: the message needs a source with a kind")
    if not isinstance(raw.get("content"), list):
        raise InvalidEventError(f"{where}: the message content must be a list of blocks")
    if kind in _NO_HISTORY:
        return None
    try:
        message = Message.from_json(raw)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise InvalidEventError(f"{where}: malformed message content: {exc!r}") from None
    if kind == ASSISTANT_MESSAGE:
        if source.get("kind") != "model" or not all(
            type(source.get(k)) is str for k in ("provider", "model")
        ):
            raise InvalidEventError(f"{where}: an assistant message needs a model source")
        if not message.content:
            return None
    elif kind == TOOL_RESULT and not any(isinstance(b, ToolResultBlock) for b in message.content):
        raise InvalidEventError(f"{where}: a tool result needs a tool-result block")
    return message
