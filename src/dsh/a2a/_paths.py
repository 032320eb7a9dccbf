"""Where the door is served (known without loading the SDK: `dsh web` routes to it first)."""

__all__ = ["A2A_PATH", "CARD_PATH", "CARD_METHODS", "RPC_METHODS"]

A2A_PATH = "/a2a"
"""Where the JSON-RPC endpoint is served."""
CARD_PATH = "/.well-known/agent-card.json"
"""The Agent Card (the SDK's well-known path)."""
CARD_METHODS = ("GET", "HEAD")
RPC_METHODS = ("POST",)
