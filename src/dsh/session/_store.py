"""`SessionStore` (`ctx.sessions`): the live sessions, their publication, flush and fork."""

from __future__ import annotations

import builtins
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, ClassVar

from .._ids import uuid4_text
from ..kernel import Disposer, Publication, ServiceKey
from ._envelope import SessionEvent
from ._events import (
    SESSION_CREATED,
    SESSION_DISPOSED,
    SESSION_EVENT,
    SESSION_FLUSH,
    event_payload,
)
from ._fork import fork_seed
from ._header import FORMAT_VERSION, FORMAT_VERSIONS, SessionHeader, SessionMeta
from ._session import Session, _now

if TYPE_CHECKING:
    from ..kernel import Context, EventBus

__all__ = ["DuplicateSessionError", "SessionPlugin", "SessionStore"]


class DuplicateSessionError(ValueError):
    """A session id that is already live in the store."""


class _Entry(Publication):
    """One entered session: where its events are published, and its publication state."""

    __slots__ = ("bus", "publish", "scope", "session")

    def __init__(
        self, entries: dict[str, _Entry], session: Session, bus: EventBus, scope: object | None
    ) -> None:
        super().__init__(entries, session.id)
        self.session = session
        self.bus = bus
        self.scope = scope
        self.publish: Callable[[SessionEvent], None] = self._publish

    def _publish(self, event: SessionEvent) -> None:
        bus = self.bus
        if bus.count(SESSION_EVENT):
            bus.emit(SESSION_EVENT, event_payload(self.session, event), self.scope)

    def _announce(self) -> None:
        self.bus.emit(SESSION_CREATED, self.session, self.scope)

    def _withdraw(self, announced: bool) -> None:
        self.session._detach(self.publish)
        if announced:
            self.bus.emit(SESSION_DISPOSED, self.session, self.scope)


class _StoreState:
    __slots__ = ("entries", "format_version")

    def __init__(self) -> None:
        self.entries: dict[str, _Entry] = {}
        """Live sessions by id, in the order they were entered."""
        self.format_version = FORMAT_VERSION


class SessionStore:
    """The live sessions of a context tree.

    `ctx.sessions` is bound to the calling context: a session created through it is owned by
    that context's owner, and the events of a session it enters are dispatched with its scope.
    """

    __slots__ = ("_ctx", "_state")

    def __init__(self) -> None:
        self._state = _StoreState()
        self._ctx: Context | None = None

    def bind_context(self, ctx: Context) -> SessionStore:
        view: SessionStore = object.__new__(SessionStore)
        view._state = self._state
        view._ctx = ctx
        return view

    @property
    def _context(self) -> Context:
        if self._ctx is None:
            raise RuntimeError("SessionStore is not bound to a context (use ctx.sessions)")
        return self._ctx

    # -- lookup ----------------------------------------------------------------------------

    def get(self, id: str) -> Session | None:
        entry = self._state.entries.get(id)
        return None if entry is None else entry.session

    def list(self) -> builtins.list[Session]:
        """Live sessions in creation order."""
        return [entry.session for entry in self._state.entries.values()]

    @property
    def format_version(self) -> int:
        """The log format of new sessions (`SessionHeader.version`): 0 unless a persistence
        that writes format-4 logs said otherwise (`use_format`)."""
        return self._state.format_version

    def use_format(self, version: int) -> Disposer:
        """New sessions get log format `version` (0 or 4) until the returned disposer runs.
        Persistence calls it: the format is the one of the logs it writes."""
        if version not in FORMAT_VERSIONS:
            raise ValueError(f"unknown session format version {version!r}")
        state = self._state
        previous, state.format_version = state.format_version, version

        def restore() -> None:
            state.format_version = previous

        return Disposer(None, restore)

    # -- creation and publication ----------------------------------------------------------

    def create(
        self,
        id: str | None = None,
        *,
        seed: Sequence[SessionEvent] | None = None,
        meta: SessionMeta | None = None,
    ) -> Session:
        """Prepare, enter and announce a session owned by the calling context's owner (its
        disposal detaches the session). A vetoed announcement rolls back and re-raises."""
        ctx = self._context
        ctx.owner.check_active()
        session = self.prepare(id, seed=seed, meta=meta)
        owned = ctx.owner.effect(self.enter(session))
        try:
            self.announce(session)
        except BaseException:
            session.rolled_back = True
            owned()
            raise
        return session

    def prepare(
        self,
        id: str | None = None,
        *,
        seed: Sequence[SessionEvent] | None = None,
        meta: SessionMeta | None = None,
    ) -> Session:
        """Build an unpublished session (id `session-<uuid4>` when omitted)."""
        if id is None:
            id = f"session-{uuid4_text()}"
        elif id in self._state.entries:
            raise DuplicateSessionError(f"session {id!r} is already live")
        meta = meta or SessionMeta()
        header = SessionHeader(
            id=id,
            created_at=_now() if meta.created_at is None else meta.created_at,
            cwd=meta.cwd,
            parent_session=meta.parent_session,
            seed_length=meta.seed_length,
            origin=meta.origin,
            delegation_depth=meta.delegation_depth,
            agent_preset=meta.agent_preset,
            version=self._state.format_version,
        )
        return Session(header, seed)

    def enter(self, session: Session) -> Disposer:
        """Make `session` live: its id is taken, and its appends are published (`session/event`)
        with the calling context's scope. Returns the detach (idempotent, not owned)."""
        ctx = self._context
        entries = self._state.entries
        current = entries.get(session.id)
        if current is not None:
            if current.session is session:
                raise ValueError(f"session {session.id!r} is already entered")
            raise DuplicateSessionError(f"session {session.id!r} is already live")
        if session.attached:
            raise RuntimeError(f"session {session.id} is already entered in a store")
        entry = _Entry(entries, session, ctx.bus, ctx.scope)
        session._attach(entry.publish)
        return Disposer(None, entry.detach)

    def announce(self, session: Session) -> None:
        """Emit `session/created` once. A synchronous listener raise propagates (a veto):
        the caller rolls back with the detach, which then emits `session/disposed`."""
        entry = self._entry(session)
        if entry is None:
            raise ValueError(f"session {session.id!r} must be entered before it is announced")
        entry.announce()

    def _entry(self, session: Session) -> _Entry | None:
        entry = self._state.entries.get(session.id)
        return entry if entry is not None and entry.session is session else None

    # -- flush and fork --------------------------------------------------------------------

    async def flush(self, session: Session) -> bool:
        """Dispatch `session/flush` (parallel) with the session's scope. True iff at least one
        listener took part; after all settle, raises the first failure."""
        entry = self._entry(session)
        if entry is not None:
            bus, scope = entry.bus, entry.scope
        else:
            ctx = self._context
            bus, scope = ctx.bus, ctx.scope
        try:
            return await bus.parallel(SESSION_FLUSH, session, scope) > 0
        except ExceptionGroup as group:
            raise group.exceptions[0] from None

    def fork(
        self,
        source: Session | str,
        boundary: int | None = None,
        child_id: str | None = None,
    ) -> Session:
        """Create a live child seeded with `source`'s events through seq `boundary`
        (inclusive; default the last). The prefix must not end inside an open turn."""
        if isinstance(source, str):
            found = self.get(source)
            if found is None:
                raise KeyError(f"no live session {source!r}")
            source = found
        seed = fork_seed(source.id, source.header.cwd, source.events, boundary)
        return self.create(child_id, seed=seed.events, meta=seed.meta)


SESSIONS: ServiceKey[SessionStore] = ServiceKey("sessions")
"""The key `ctx.sessions` reads: `ctx.require(SESSIONS)` below the `dsh.Context` layer."""


class SessionPlugin:
    """Provides `ctx.sessions`."""

    name: ClassVar[str] = "sessions"

    @staticmethod
    def apply(ctx: Context, config: None) -> None:
        ctx.provide(SESSIONS, SessionStore())
