"""`rewind/conversation`: the surface goes back to what it was before a seq; later events
stay in the log; rewinds compose (an undo is a rewind to before the rewind) and replay from
a seed."""

from __future__ import annotations

import pytest

from dsh.event_types import REWIND_CONVERSATION
from dsh.session import InvalidEventError, ReplaceOp, Session

from .samples import assistant, user


def texts(session: Session) -> list[str]:
    return [m.text for m in session.derive_messages()]


def exchange(session: Session, prompt: str) -> int:
    """A prompt and its answer; returns the prompt's seq."""
    seq = session.append("user/message", user(prompt), surface_op="append").seq
    session.append("assistant/message", assistant(f"re {prompt}"), surface_op="append")
    return seq


def test_the_history_goes_back_and_the_log_keeps_the_rest() -> None:
    s = Session.create("s")
    exchange(s, "one")
    two = exchange(s, "two")
    exchange(s, "three")
    generation = s.replace_generation
    s.append(REWIND_CONVERSATION, {"id": "r1", "toSeq": two})
    assert texts(s) == ["one", "re one"]
    assert s.replace_generation == generation + 1
    assert s.seq == 7  # nothing was removed
    exchange(s, "four")
    assert texts(s) == ["one", "re one", "four", "re four"]


def test_an_undo_is_a_rewind_to_before_the_rewind() -> None:
    s = Session.create("s")
    exchange(s, "one")
    two = exchange(s, "two")
    rewind = s.append(REWIND_CONVERSATION, {"id": "r1", "toSeq": two}).seq
    exchange(s, "other")
    s.append(REWIND_CONVERSATION, {"id": "r2", "toSeq": rewind, "undo": "r1"})
    assert texts(s) == ["one", "re one", "two", "re two"]
    # and forward again to the branch the first rewind started
    s.append(REWIND_CONVERSATION, {"id": "r3", "toSeq": s.seq})
    assert texts(s) == ["one", "re one", "two", "re two"]


def test_a_replace_before_the_target_stays_and_one_after_it_goes() -> None:
    s = Session.create("s")
    one = exchange(s, "one")
    exchange(s, "two")
    summary = user("summary")
    s.append(
        "user/message",
        summary,
        surface_op=ReplaceOp(one, one + 3),
        source_event_seqs=[one, one + 1, one + 2, one + 3],
    )
    after = exchange(s, "three")
    s.append(REWIND_CONVERSATION, {"id": "r1", "toSeq": after})
    assert texts(s) == ["summary"]
    s.append(REWIND_CONVERSATION, {"id": "r2", "toSeq": one + 2})
    assert texts(s) == ["one", "re one"]


def test_a_seeded_session_replays_its_rewinds() -> None:
    s = Session.create("s")
    exchange(s, "one")
    two = exchange(s, "two")
    s.append(REWIND_CONVERSATION, {"id": "r1", "toSeq": two})
    copy = Session.create("t", seed=s.events[:])
    assert texts(copy) == ["one", "re one"]


@pytest.mark.parametrize("target", [None, -1, 99, "3"])
def test_a_target_outside_the_log_is_refused(target: object) -> None:
    s = Session.create("s")
    exchange(s, "one")
    with pytest.raises(InvalidEventError, match="toSeq must be a seq of the log"):
        s.append(REWIND_CONVERSATION, {"id": "r1", "toSeq": target})
    assert s.seq == 2
