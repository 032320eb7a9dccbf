from collections.abc import Sequence

import pytest

from dsh.kernel import CancelSignal
from dsh.tools import ToolsPlugin


class Agent:
    """A scope key standing in for an agent (compared by identity)."""

    def __init__(self, name: str = "agent") -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"<Agent {self.name}>"


@pytest.fixture
def ctx_plugins() -> Sequence[object]:
    return [ToolsPlugin]


@pytest.fixture
def signal() -> CancelSignal:
    return CancelSignal()
