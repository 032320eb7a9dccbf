"""The AG-UI door (Agent User Interaction protocol 1.0, through the official
`ag-ui-protocol` types and encoder): a CopilotKit or `@ag-ui/client` front end runs turns of
dsh sessions and draws them with its own UI. Served by `dsh web`; needs the `agui` extra,
loaded when a name other than the path is first used."""

from typing import TYPE_CHECKING, Any

from .._lazy import lazy_attribute
from ._paths import AGUI_METHODS, AGUI_PATH

if TYPE_CHECKING:
    from ._door import AguiDoor, SessionOpener
    from ._translate import APPROVAL_EVENT, QUESTION_EVENT, RunView

_LAZY = {
    "AguiDoor": "._door",
    "SessionOpener": "._door",
    "APPROVAL_EVENT": "._translate",
    "QUESTION_EVENT": "._translate",
    "RunView": "._translate",
}


def __getattr__(name: str) -> Any:
    return lazy_attribute(__name__, name, _LAZY)


__all__ = [
    "AGUI_METHODS",
    "AGUI_PATH",
    "APPROVAL_EVENT",
    "QUESTION_EVENT",
    "AguiDoor",
    "RunView",
    "SessionOpener",
]
