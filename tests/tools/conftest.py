from collections.abc import AsyncIterator

import pytest

from dsh.kernel import CancelSignal, Context
from dsh.tools import ToolsPlugin


class Agent:
    """A scope key standing in for an agent (compared by identity)."""

    def __init__(self, name: str = "agent") -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"<Agent {self.name}>"


@pytest.fixture
async def ctx() -> AsyncIterator[Context]:
    root = Context()
    await root.plugin(ToolsPlugin)
    yield root
    await root.owner.dispose()


@pytest.fixture
def signal() -> CancelSignal:
    return CancelSignal()
