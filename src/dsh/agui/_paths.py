"""Where the endpoint is served (known without loading `ag-ui-protocol`)."""

__all__ = ["AGUI_METHODS", "AGUI_PATH"]

AGUI_PATH = "/agui"
AGUI_METHODS = ("POST",)
