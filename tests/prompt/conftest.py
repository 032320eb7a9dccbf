from collections.abc import Sequence

import pytest

from dsh.prompt import SystemPromptPlugin


@pytest.fixture
def ctx_plugins() -> Sequence[object]:
    return [(SystemPromptPlugin, {})]
