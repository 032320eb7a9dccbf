"""Fixtures of the CLI tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from .terminal import Chats


@pytest.fixture
def chat(tmp_path: Path) -> Iterator[Chats]:
    """Start `dsh chat` in a pseudo-terminal: `chat(script, *args) -> (terminal, server)`."""
    chats = Chats(tmp_path)
    yield chats
    chats.close()
