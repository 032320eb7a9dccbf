from collections.abc import AsyncIterator

import pytest

from dsh.kernel import Context
from dsh.session import SessionPlugin, SessionStore


@pytest.fixture
async def ctx() -> AsyncIterator[Context]:
    root = Context()
    await root.plugin(SessionPlugin)
    yield root
    await root.owner.dispose()


@pytest.fixture
def store(ctx: Context) -> SessionStore:
    return ctx.sessions
