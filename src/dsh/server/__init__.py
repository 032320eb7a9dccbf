"""The JSON-RPC stdio runtime, wire-compatible with the reference SDK protocol."""

from ._launch import PROFILE_ENV
from ._output import FrameOutput
from ._protocol import RpcError
from ._server import SERVER_INFO, JsonRpcServer
from ._stdio import Line, Overlong, line_queue, main, serve

__all__ = [
    "PROFILE_ENV",
    "SERVER_INFO",
    "FrameOutput",
    "JsonRpcServer",
    "Line",
    "Overlong",
    "RpcError",
    "line_queue",
    "main",
    "serve",
]
