"""Replay: every stored session is a regression test. Today's code runs a recorded session
again, offline, its recorded answers as the model (over the loopback server of
`dsh.testing`), and reports the first request whose body differs and the tool calls whose
results differ.

```python
import dsh.replay

report = dsh.replay.replay("session.jsonl")  # or: await dsh.replay.replay_async(...)
print(report.summary())
report.assert_identical()
```
"""

from ._api import replay, replay_async, replay_log, replay_stored
from ._recording import Prompt, Recording, ReplayError, load_log, log_header, recording_of
from ._report import ReplayReport, RequestDivergence, ToolDivergence
from ._run import REPLAY_KEY_ENV, ToolsMode, model_string
from ._side import side_calls
from ._views import RequestView, ToolView, request_views, tool_views

__all__ = [
    "REPLAY_KEY_ENV",
    "Prompt",
    "Recording",
    "ReplayError",
    "ReplayReport",
    "RequestDivergence",
    "RequestView",
    "ToolDivergence",
    "ToolView",
    "ToolsMode",
    "load_log",
    "log_header",
    "model_string",
    "recording_of",
    "replay",
    "replay_async",
    "replay_log",
    "replay_stored",
    "request_views",
    "side_calls",
    "tool_views",
]
