"""`ShadowStore` on its own: the size cap, symlinks and modes, a workspace's one store shared
by processes, and the service's shared snapshots."""

from __future__ import annotations

import asyncio
import os
import shutil
import threading
from pathlib import Path

import pytest

from dsh.plugins.rewind import Change, GitError, RewindConfig, Rewinds, ShadowStore, files_text
from dsh.session import Session, SessionHeader
from dsh.workspace import Placeholders
from tests.conftest import mode

from .scenario import tree_hash, workspace


def test_files_over_the_cap_are_left_out_and_modes_and_links_come_back(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    (ws / "tool.sh").write_text("#!/bin/sh\n")
    (ws / "tool.sh").chmod(0o755)
    os.symlink("a.txt", ws / "link")
    (ws / "big.dat").write_bytes(b"x" * 2000)
    store = ShadowStore(tmp_path / "store", ws, max_file_bytes=1000)
    first = store.snapshot()
    before = tree_hash(ws)
    (ws / "tool.sh").chmod(0o644)
    (ws / "link").unlink()
    (ws / "big.dat").write_bytes(b"y" * 3000)
    now = store.snapshot()
    assert {c.path for c in store.changes(now, first)} == {"tool.sh", "link"}
    store.restore(first, store.changes(now, first))
    assert os.readlink(ws / "link") == "a.txt" and os.access(ws / "tool.sh", os.X_OK)
    assert (ws / "big.dat").read_bytes() == b"y" * 3000  # never recorded, never restored
    (ws / "big.dat").write_bytes(b"x" * 2000)
    assert tree_hash(ws) == before


def test_two_processes_share_a_workspaces_store_and_never_reuse_a_stale_tree(
    tmp_path: Path,
) -> None:
    """Two stores on one folder are what two processes have: each sees the other's index."""
    ws = workspace(tmp_path)
    one = ShadowStore(tmp_path / "store", ws, 1000)
    tree = one.snapshot()
    (ws / "a.txt").write_bytes(b"changed\n")
    two = ShadowStore(tmp_path / "store", ws, 1000)
    later = two.snapshot()  # from the index the first wrote: only a.txt is hashed again
    assert [(c.status, c.path) for c in two.changes(tree, later)] == [("M", "a.txt")]
    # the index now matches the workspace: the first store must not answer its own last tree
    assert one.snapshot() == later
    two.restore(tree, two.changes(later, tree))  # a tree the first store wrote
    assert (ws / "a.txt").read_bytes() == b"alpha\n"
    assert one.snapshot() == tree


async def test_sessions_asking_at_once_share_a_snapshot_taken_after_they_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = workspace(tmp_path)
    rewinds = Rewinds(RewindConfig(), tmp_path / "stores")
    sessions = [_session(f"s{n}", ws) for n in range(20)]
    taken: list[str] = []
    inside, release = threading.Event(), threading.Event()
    real = ShadowStore.snapshot

    def snapshot(store: ShadowStore) -> str:
        tree = real(store)
        taken.append(tree)
        if len(taken) == 1:  # the first is held until the others have asked
            inside.set()
            release.wait(10)
        return tree

    monkeypatch.setattr(ShadowStore, "snapshot", snapshot)
    first = asyncio.ensure_future(rewinds.checkpoint(sessions[0], "turn", 1))
    await asyncio.to_thread(inside.wait, 10)
    (ws / "a.txt").write_bytes(b"after the first began\n")  # the others must see this
    rest = [asyncio.ensure_future(rewinds.checkpoint(s, "turn", 1)) for s in sessions[1:]]
    await asyncio.sleep(0)  # (each has asked)
    release.set()
    trees = await asyncio.gather(first, *rest)
    assert len(taken) == 2
    assert trees[0] == taken[0] and set(trees[1:]) == {taken[1]} != {taken[0]}
    store = rewinds.store(sessions[1])
    assert [c.path for c in store.changes(taken[0], taken[1])] == ["a.txt"]


def test_fifos_and_a_file_turned_folder_are_no_trouble(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    store = ShadowStore(tmp_path / "store", ws, 1000)
    first = store.snapshot()
    os.mkfifo(ws / "gate")  # never opened: reading it would block
    (ws / "a.txt").unlink()
    (ws / "a.txt").mkdir()
    (ws / "a.txt" / "inner").write_bytes(b"in\n")
    now = store.snapshot()
    changes = {(c.status, c.path) for c in store.changes(first, now)}
    assert changes == {("D", "a.txt"), ("A", "a.txt/inner")}
    store.restore(first, store.changes(now, first))  # the folder goes, the file comes back
    assert (ws / "a.txt").read_bytes() == b"alpha\n"


def test_a_folder_turned_file_or_symlink_is_recorded_and_comes_back(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    (ws / "d").mkdir()
    (ws / "d" / "x.txt").write_bytes(b"in\n")
    store = ShadowStore(tmp_path / "store", ws, 1000)
    first = store.snapshot()
    shutil.rmtree(ws / "sub")
    (ws / "sub").write_bytes(b"a file now\n")  # its old entries are under a file
    (ws / "d").rename(ws / "e")
    os.symlink("e", ws / "d")
    now = store.snapshot()
    changes = {(c.status, c.path) for c in store.changes(first, now)}
    assert {("D", "sub/keep.txt"), ("A", "sub"), ("A", "d"), ("D", "d/x.txt")} <= changes
    store.restore(first, store.changes(now, first))
    assert (ws / "sub" / "keep.txt").read_bytes() == b"kept\n"
    assert not (ws / "d").is_symlink() and (ws / "d" / "x.txt").read_bytes() == b"in\n"
    assert store.snapshot() == first


def test_the_sandboxs_placeholders_are_left_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While a command runs, the sandbox holds absent control files with empty ones (named
    in its registry): a checkpoint taken meanwhile (another session's) records the
    workspace's own files, not those."""
    monkeypatch.setenv("DSH_HOME", str(tmp_path / "home"))
    ws = workspace(tmp_path)
    store = ShadowStore(tmp_path / "store", ws, 1000)
    first = store.snapshot()
    real = os.path.realpath(ws)
    Placeholders(real).write({os.path.join(real, ".mcp.json")})
    (ws / ".mcp.json").write_bytes(b"")
    (ws / "new.txt").write_bytes(b"new\n")
    assert [c.path for c in store.changes(first, store.snapshot())] == ["new.txt"]


def two_checkpoints(tmp_path: Path) -> tuple[Path, ShadowStore, str, str]:
    """A workspace, its store, and two checkpoints: before and after a.txt changed."""
    ws = workspace(tmp_path)
    store = ShadowStore(tmp_path / "store", ws, 1000)
    first = store.snapshot()
    (ws / "a.txt").write_bytes(b"changed\n")
    return ws, store, first, store.snapshot()


def test_a_workspace_gone_still_has_its_diffs(tmp_path: Path) -> None:
    ws, store, first, now = two_checkpoints(tmp_path)
    shutil.rmtree(ws)
    assert [c.path for c in store.changes(first, now)] == ["a.txt"]
    with pytest.raises(GitError, match=f"the workspace {ws} no longer exists"):
        store.snapshot()


def test_a_store_removed_since_says_its_checkpoints_are_gone(tmp_path: Path) -> None:
    """`rm -r $DSH_HOME/rewind`: neither "git is not installed" nor git's own words."""
    _, store, first, now = two_checkpoints(tmp_path)
    shutil.rmtree(tmp_path / "store")
    gone = "the checkpoints are no longer in the rewind store .*: there is nothing to rewind to"
    with pytest.raises(GitError, match=gone):
        store.changes(first, now)
    store.snapshot()  # a new store: the old checkpoints' trees are not in it
    with pytest.raises(GitError, match=gone):
        store.patch(first, now)


@pytest.mark.usefixtures("umask_022")
def test_every_folder_it_makes_is_the_users_alone(tmp_path: Path) -> None:
    """Indexes name the workspace's files and hashes: from the home down, 0700 whatever the
    umask."""
    ws = workspace(tmp_path)
    home = tmp_path / "home" / ".dsh"
    root = home / "rewind" / "workspaces" / "w1"
    ShadowStore(root, ws, 1000).snapshot()
    for folder in (home, home / "rewind", home / "rewind" / "workspaces", root, root / "objects"):
        assert mode(folder) == 0o700, folder
    assert mode(root / "lock") == 0o600


def _session(sid: str, ws: Path) -> Session:
    return Session.create(sid, header=SessionHeader(id=sid, created_at=0, cwd=str(ws)))


def test_a_name_that_is_not_utf8_or_holds_a_newline_stays_on_its_line() -> None:
    text = files_text([Change("A", "lat\udce9.txt"), Change("M", "a\nb.txt")])
    assert text == "A lat\ufffd.txt, M a\\nb.txt"
