"""`Rewinds` (`ctx.require(REWIND)`): checkpoints of a session's workspace, the prompts a
rewind can go back to, turn diffs, and the rewinds themselves (code, conversation, both,
undo), each a durable event."""

from __future__ import annotations

import asyncio
import hashlib
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Literal, Protocol

import msgspec

from ..._ids import uuid4_hex
from ...events import (
    RewindCheckpointEvent,
    RewindCodeEvent,
    RewindConversationEvent,
    append,
)
from ...kernel import ServiceKey
from ...llm import Json
from ...session import Session, SessionEvent, last_turn
from ._git import EMPTY_TREE, Change, GitError, ShadowStore, too_broad
from ._log import (
    REFUSED,
    Op,
    Prompt,
    State,
    outside_gaps,
    prompts_of,
    refusal_of,
    refusals_by_turn,
    rewinds_of,
    states_of,
    turn_end_tree,
)

__all__ = [
    "REWIND",
    "Mode",
    "PromptInfo",
    "RewindError",
    "RewindReport",
    "Rewinds",
    "TurnDiff",
]

Mode = Literal["code", "conversation", "both"]
MODES: tuple[Mode, ...] = ("code", "conversation", "both")


def parse_mode(text: str) -> Mode | None:
    """`code`, `conversation` or `both` as a `Mode`; None for anything else."""
    return next((mode for mode in MODES if mode == text), None)


class RewindError(ValueError):
    """A rewind that cannot be done as asked (unknown prompt, a turn running, nothing to
    undo, no checkpoints); the message says what to do."""


class PromptInfo(msgspec.Struct, frozen=True, omit_defaults=True):
    """A prompt a rewind can go back to: its turn number, text, the files its turn changed
    (workspace-relative, `status` A/M/D/T), and whether it is on the current conversation.
    `unrecorded`: why a checkpoint of its turn was not taken (then `changes` may miss what
    the turn changed after the last one that was)."""

    turn: int
    text: str
    changes: tuple[Change, ...]
    active: bool
    unrecorded: str | None = None


class TurnDiff(msgspec.Struct, frozen=True, omit_defaults=True):
    """What turn `turn` changed in the workspace: the files and a unified diff
    (`unrecorded`: as in `PromptInfo`)."""

    turn: int
    changes: tuple[Change, ...]
    patch: str
    unrecorded: str | None = None


class RewindReport(msgspec.Struct, frozen=True):
    """What a rewind did (or, `dry_run`, would do): `restored` the file changes it made,
    `kept` the paths changed outside dsh since the target that it left alone (pass `force`
    to take them back too), `to_seq` where the conversation went back to. `id` names the
    rewind (for an undo, `undo` names the rewind it undid)."""

    id: str
    mode: Mode
    turn: int | None
    dry_run: bool
    restored: tuple[Change, ...] = ()
    kept: tuple[str, ...] = ()
    to_seq: int | None = None
    undo: str | None = None
    patch: str = ""
    """The diff from the workspace now to the rewound state (what `restored` does)."""

    def to_json(self) -> dict[str, Json]:
        """camelCase, as the JSON-RPC method and the web UI send it."""
        return {
            "id": self.id,
            "mode": self.mode,
            "turn": self.turn,
            "dryRun": self.dry_run,
            "restored": [{"status": c.status, "path": c.path} for c in self.restored],
            "kept": list(self.kept),
            "toSeq": self.to_seq,
            "undo": self.undo,
            "patch": self.patch,
        }


REWIND: ServiceKey[Rewinds] = ServiceKey("rewind")


class Limits(Protocol):
    """What a checkpoint may record (the plugin's config)."""

    @property
    def max_file_bytes(self) -> int: ...
    @property
    def max_files(self) -> int: ...
    @property
    def max_bytes(self) -> int: ...


class _Target(msgspec.Struct, frozen=True):
    turn: int | None
    tree: str | None
    state: int
    to_seq: int | None
    undo: str | None
    mode: Mode


class _Recorder:
    """The snapshots of one workspace's store in this process: a caller gets a snapshot
    taken after it asked, and the callers that ask while one is being taken share the next
    (a thousand sessions prompting at once in one workspace cost two snapshots, not a
    thousand)."""

    def __init__(self, store: ShadowStore) -> None:
        self.store = store
        self._lock = asyncio.Lock()
        self._started = 0
        self._finished = 0
        """The number (`_started` when it began) of the last snapshot that finished."""
        self._last: str | BaseException = ""

    async def snapshot(self) -> str:
        wanted = self._started + 1  # the first snapshot to begin after this call
        async with self._lock:
            if self._finished < wanted:
                self._started += 1
                number = self._started
                try:
                    self._last = await asyncio.to_thread(self.store.snapshot)
                except (GitError, OSError) as exc:
                    self._last = exc
                self._finished = number
            last = self._last
        if isinstance(last, BaseException):
            raise last
        return last


class Rewinds:
    """The rewind service: one shadow store per workspace under `root`
    (`<root>/<digest of the path>/`), shared by the workspace's sessions."""

    def __init__(self, limits: Limits, root: Path) -> None:
        self._limits = limits
        self._root = root
        self._recorders: dict[str, _Recorder] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._refused: dict[str, str] = {}
        """Sessions whose workspace cannot be recorded, and why (tried once)."""

    def covers(self, session: Session) -> bool:
        """Whether `session` gets checkpoints (a workspace that could be recorded, not a
        subagent's session)."""
        header = session.header
        return (
            header.cwd is not None
            and header.origin != "subagent"
            and (session.id not in self._refused)
        )

    def no_checkpoints(self, session: Session) -> str:
        """Why `session` has no checkpoint to go back to, as one line."""
        reason = self._refused.get(session.id) or refusal_of(session.events[:])
        return f"session {session.id} has no checkpoints: {reason or _why_none(session)}"

    def store(self, session: Session) -> ShadowStore:
        return self._recorder(session).store

    def _recorder(self, session: Session) -> _Recorder:
        cwd = session.header.cwd
        if cwd is None:
            raise RewindError(f"session {session.id} has no workspace (cwd): nothing to rewind")
        recorder = self._recorders.get(cwd)
        if recorder is None:
            limits = self._limits
            store = ShadowStore(
                self._root / _workspace_key(cwd),
                Path(cwd),
                limits.max_file_bytes,
                limits.max_files,
                limits.max_bytes,
            )
            recorder = self._recorders[cwd] = _Recorder(store)
        return recorder

    def forget(self, session_id: str) -> None:
        self._locks.pop(session_id, None)
        self._refused.pop(session_id, None)

    def _lock(self, session: Session) -> asyncio.Lock:
        return self._locks.setdefault(session.id, asyncio.Lock())

    # -- checkpoints -------------------------------------------------------------------------

    async def checkpoint(
        self, session: Session, kind: str, turn: int, call_id: str | None = None
    ) -> str:
        """Record the workspace now as a `rewind/checkpoint`; returns its tree."""
        recorder = self._recorder(session)
        async with self._lock(session):
            try:
                tree = await recorder.snapshot()
            except (GitError, OSError) as exc:
                self._refused[session.id] = str(exc)
                refused = RewindCheckpointEvent(turn=turn, kind=REFUSED, tree="", reason=str(exc))
                append(session, refused)
                raise
            append(
                session,
                RewindCheckpointEvent(turn=turn, kind=kind, tree=tree, call_id=call_id),
            )
        return tree

    # -- reading -----------------------------------------------------------------------------

    async def prompts(self, session: Session) -> list[PromptInfo]:
        """The prompts of `session` with a checkpoint, oldest first (none: `no_checkpoints`
        says why). Reads the shadow store only."""
        events = session.events[:]
        states = states_of(events)
        prompts = prompts_of(events, states, _own(session))
        if not prompts:
            return []  # `no_checkpoints` says why
        store = self.store(session)
        nodes = set(session.surface.nodes)
        refused = refusals_by_turn(events)
        out: list[PromptInfo] = []
        with _git_errors():
            for prompt in prompts:
                end = turn_end_tree(states, prompt.state)
                changes = await asyncio.to_thread(store.changes, prompt.tree, end)
                active = _active(events, prompt, nodes)
                why = refused.get(prompt.turn)
                out.append(PromptInfo(prompt.turn, prompt.text, tuple(changes), active, why))
        return out

    async def diff(self, session: Session, turn: int | None = None) -> TurnDiff:
        """What turn `turn` (default: the last with a checkpoint) changed in the workspace."""
        events = session.events[:]
        states = states_of(events)
        prompts = prompts_of(events, states, _own(session))
        prompt = _prompt(prompts, turn, session, self.no_checkpoints(session))
        end = turn_end_tree(states, prompt.state)
        store = self.store(session)
        with _git_errors():
            changes = await asyncio.to_thread(store.changes, prompt.tree, end)
            patch = await asyncio.to_thread(store.patch, prompt.tree, end)
        why = refusals_by_turn(events).get(prompt.turn)
        return TurnDiff(prompt.turn, tuple(changes), patch, why)

    # -- rewinding ---------------------------------------------------------------------------

    async def rewind(
        self,
        session: Session,
        to: int | None = None,
        *,
        mode: Mode = "both",
        undo: bool = False,
        force: bool = False,
        dry_run: bool = False,
    ) -> RewindReport:
        """Take the workspace (`code`), the history (`conversation`) or both back to just
        before prompt `to` ran, or (`undo`) undo the last rewind. Files changed outside dsh
        since that point are kept and reported unless `force`."""
        if mode not in MODES:
            raise RewindError(f"unknown rewind mode {mode!r}: use code, conversation or both")
        if (to is None) == (not undo):
            raise RewindError("say which prompt to rewind to (--to N), or undo the last rewind")
        turn = last_turn(session.events)
        if turn is not None and not turn.closed:
            raise RewindError(
                f"session {session.id} is running turn {turn.number}: "
                "wait for it to end or cancel it, then rewind"
            )
        async with self._lock(session):
            with _git_errors():
                return await self._locked(session, to, mode, undo, force=force, dry_run=dry_run)

    async def _locked(
        self,
        session: Session,
        to: int | None,
        mode: Mode,
        undo: bool,
        *,
        force: bool,
        dry_run: bool,
    ) -> RewindReport:
        events = session.events[:]
        states = states_of(events)
        if undo:
            target = _undo_target(events, states, _own(session))
        else:
            none = self.no_checkpoints(session)
            target = _prompt_target(events, states, to, mode, session, none)
        return await self._apply(session, target, states, force=force, dry_run=dry_run)

    async def _apply(
        self, session: Session, target: _Target, states: list[State], *, force: bool, dry_run: bool
    ) -> RewindReport:
        op_id = uuid4_hex()
        restored: tuple[Change, ...] = ()
        kept: tuple[str, ...] = ()
        patch = ""
        if target.mode != "conversation" and target.tree is not None:
            code = await self._code(session, target, target.tree, states, force=force)
            restored, kept, patch, now = code
            if not dry_run:
                await self._restore(session, target, op_id, now, restored, kept)
        conversation = target.mode != "code" and target.to_seq is not None
        if conversation and not dry_run:
            assert target.to_seq is not None
            append(
                session,
                RewindConversationEvent(
                    id=op_id, to_seq=target.to_seq, turn=target.turn, undo=target.undo
                ),
            )
        to_seq = target.to_seq if conversation else None
        return RewindReport(
            op_id, target.mode, target.turn, dry_run, restored, kept, to_seq, target.undo, patch
        )

    async def _code(
        self, session: Session, target: _Target, tree: str, states: list[State], *, force: bool
    ) -> tuple[tuple[Change, ...], tuple[str, ...], str, str]:
        """What a code rewind to `tree` would change: the changes it makes, the paths it
        keeps (changed outside dsh), their diff, and the workspace's tree now."""
        store = self.store(session)
        now = await self._recorder(session).snapshot()
        changes = await asyncio.to_thread(store.changes, now, tree)
        outside = await asyncio.to_thread(_outside, store, states, target.state, now)
        restored = tuple(c for c in changes if force or c.path not in outside)
        kept = tuple(c.path for c in changes if not force and c.path in outside)
        paths = [c.path for c in restored]
        patch = await asyncio.to_thread(store.patch, now, tree, paths) if paths else ""
        return restored, kept, patch, now

    async def _restore(
        self,
        session: Session,
        target: _Target,
        op_id: str,
        before: str,
        restored: tuple[Change, ...],
        kept: tuple[str, ...],
    ) -> None:
        """Write the changes back, then log `rewind/code` with the tree it left."""
        store = self.store(session)
        assert target.tree is not None
        await asyncio.to_thread(store.restore, target.tree, list(restored))
        after = await self._recorder(session).snapshot()
        event = RewindCodeEvent(
            id=op_id,
            before=before,
            after=after,
            restored=tuple(c.path for c in restored),
            kept=kept,
            turn=target.turn,
            undo=target.undo,
        )
        append(session, event)


@contextmanager
def _git_errors() -> Iterator[None]:
    """git's failures (a missing object, git gone) and the workspace's (a file that cannot
    be read or written back) as a `RewindError`."""
    try:
        yield
    except GitError as exc:
        raise RewindError(f"the workspace's checkpoints cannot be read: {exc}") from None
    except OSError as exc:
        raise RewindError(f"the workspace cannot be read or restored: {exc}") from None


def _workspace_key(cwd: str) -> str:
    """A workspace's folder name under the shared root: a digest of its path."""
    return hashlib.sha256(os.fsencode(cwd)).hexdigest()[:24]


def _why_none(session: Session) -> str:
    """Why a session whose log records no refusal has no checkpoints."""
    header = session.header
    if header.cwd is None:
        return "it has no workspace (cwd)"
    broad = too_broad(Path(header.cwd))
    if broad is not None:
        return broad
    if header.origin == "subagent":
        return "a subagent's session is not checkpointed (its parent's turns are)"
    if header.seed_length:
        return "a fork lists only its own prompts (rewind the parent for the earlier ones)"
    return "none recorded yet (each prompt from now on gets one)"


def _own(session: Session) -> int:
    """The seq a session's own checkpoints start at: a fork's seed is its parent's."""
    return session.header.seed_length or 0


def _outside(store: ShadowStore, states: Sequence[State], start: int, now: str) -> set[str]:
    """The paths changed outside dsh after `states[start]` (up to `now`)."""
    gaps = outside_gaps(states, start)
    gaps.append((states[-1].tree if states else EMPTY_TREE, now))
    paths: set[str] = set()
    for old, new in gaps:
        paths.update(c.path for c in store.changes(old, new))
    return paths


def _active(events: Sequence[SessionEvent], prompt: Prompt, nodes: set[int]) -> bool:
    """Whether the prompt's message is on the current history (not rewound away)."""
    for event in events[prompt.seq :]:
        if event.surface_op is not None:
            return event.seq in nodes
    return False


def _prompt(prompts: list[Prompt], turn: int | None, session: Session, none: str) -> Prompt:
    """Prompt `turn` (default: the last); `none` says why there is none at all."""
    if not prompts:
        raise RewindError(none)
    if turn is None:
        return prompts[-1]
    for prompt in prompts:
        if prompt.turn == turn:
            return prompt
    numbers = ", ".join(str(p.turn) for p in prompts)
    raise RewindError(
        f"session {session.id} has no prompt {turn} with a checkpoint (it has {numbers})"
    )


def _prompt_target(
    events: Sequence[SessionEvent],
    states: list[State],
    to: int | None,
    mode: Mode,
    session: Session,
    none: str,
) -> _Target:
    prompt = _prompt(prompts_of(events, states, _own(session)), to, session, none)
    return _Target(prompt.turn, prompt.tree, prompt.state, prompt.seq, None, mode)


def _undo_target(events: Sequence[SessionEvent], states: list[State], first: int) -> _Target:
    ops: list[Op] = rewinds_of(events, first)
    if not ops:
        raise RewindError("there is no rewind to undo")
    op = ops[-1]
    mode: Mode = "both" if op.code and op.conversation else "code" if op.code else "conversation"
    tree = op.code.before if op.code else None
    seq = op.code.seq if op.code else -1
    state = next((i for i, s in enumerate(states) if s.role == "before" and s.seq == seq), 0)
    return _Target(None, tree, state, op.seq, op.id, mode)
