"""The built-in tools' fixture, for plugins that act on tool calls."""

from tests.tools.builtin.conftest import make_tools

__all__ = ["make_tools"]
