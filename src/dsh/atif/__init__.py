"""ATIF (the Agent Trajectory Interchange Format, Harbor's trajectory format) export of a
session log: `to_atif(events, header)` and `export_session(persistence, id)`."""

from ._convert import ATIF_VERSION, SessionLog, to_atif
from ._export import export_session

__all__ = ["ATIF_VERSION", "SessionLog", "export_session", "to_atif"]
