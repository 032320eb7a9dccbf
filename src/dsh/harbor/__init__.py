"""dsh as a Harbor agent: `harbor run -a dsh.harbor:DshAgent -m deepseek/deepseek-v4-pro …`.

`DshAgent` subclasses Harbor's `BaseInstalledAgent`, so it exists only where Harbor is
installed (the extra `harbor`, Python >= 3.12): it is built on first access, and
`import dsh.harbor` imports no Harbor module."""

from typing import Any

from ._commands import dsh_model, install_script, mcp_file, run_command
from ._results import RunFigures, read_figures, read_trajectory
from ._source import source_tree, stage_source

__all__ = [
    "DshAgent",
    "RunFigures",
    "dsh_model",
    "install_script",
    "mcp_file",
    "read_figures",
    "read_trajectory",
    "run_command",
    "source_tree",
    "stage_source",
]


def __getattr__(name: str) -> Any:
    if name == "DshAgent":
        from ._agent import agent_class

        return agent_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
