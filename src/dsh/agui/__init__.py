"""The AG-UI door (Agent User Interaction protocol 1.0, through the official
`ag-ui-protocol` types and encoder): a CopilotKit or `@ag-ui/client` front end runs turns of
dsh sessions and draws them with its own UI. Served by `dsh web`; needs the `agui` extra."""

from ._door import AGUI_PATH, AguiDoor, SessionOpener
from ._translate import APPROVAL_EVENT, QUESTION_EVENT, RunView

__all__ = ["AGUI_PATH", "APPROVAL_EVENT", "QUESTION_EVENT", "AguiDoor", "RunView", "SessionOpener"]
