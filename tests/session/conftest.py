from collections.abc import Sequence

import pytest

from dsh import Context
from dsh.session import SessionPlugin, SessionStore


@pytest.fixture
def ctx_plugins() -> Sequence[object]:
    return [SessionPlugin]


@pytest.fixture
def store(ctx: Context) -> SessionStore:
    return ctx.sessions
