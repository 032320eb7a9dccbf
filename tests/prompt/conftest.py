from collections.abc import AsyncIterator

import pytest

from dsh.kernel import Context
from dsh.prompt import SystemPromptPlugin


@pytest.fixture
async def root() -> AsyncIterator[Context]:
    ctx = Context()
    await ctx.plugin(SystemPromptPlugin, {})
    yield ctx
    await ctx.owner.dispose()
