"""`ShadowStore` on its own: the size cap, symlinks and modes, and two sessions of one
workspace sharing objects and a warm index."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dsh.plugins.rewind import ShadowStore
from tests.conftest import mode

from .scenario import tree_hash, workspace


def test_files_over_the_cap_are_left_out_and_modes_and_links_come_back(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    (ws / "tool.sh").write_text("#!/bin/sh\n")
    (ws / "tool.sh").chmod(0o755)
    os.symlink("a.txt", ws / "link")
    (ws / "big.dat").write_bytes(b"x" * 2000)
    store = ShadowStore(tmp_path / "git", ws, max_file_bytes=1000)
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


def test_sessions_of_one_workspace_share_objects_and_start_warm(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    shared = tmp_path / "shared"
    one = ShadowStore(tmp_path / "one", ws, 1000, shared=shared)
    tree = one.snapshot()
    assert (shared / "index").is_file()
    (ws / "a.txt").write_bytes(b"changed\n")
    two = ShadowStore(tmp_path / "two", ws, 1000, shared=shared)
    later = two.snapshot()  # from the warm index: only a.txt is hashed again
    assert [(c.status, c.path) for c in two.changes(tree, later)] == [("M", "a.txt")]
    two.restore(tree, two.changes(later, tree))  # a tree the first session wrote
    assert (ws / "a.txt").read_bytes() == b"alpha\n"


def test_fifos_and_a_file_turned_folder_are_no_trouble(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    store = ShadowStore(tmp_path / "git", ws, 1000)
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


@pytest.mark.usefixtures("umask_022")
def test_every_folder_it_makes_is_the_users_alone(tmp_path: Path) -> None:
    """Indexes name the workspace's files and hashes: from the home down, 0700 whatever the
    umask."""
    ws = workspace(tmp_path)
    home = tmp_path / "home" / ".dsh"
    shared = home / "rewind" / "workspaces" / "w1"
    ShadowStore(home / "rewind" / "s1", ws, 1000, shared=shared).snapshot()
    for folder in (home, home / "rewind", home / "rewind" / "s1", shared, shared / "objects"):
        assert mode(folder) == 0o700, folder
