"""The checkpoint policy: flush sessions before model calls, tool bodies and pre-steps."""

from ._plugin import CheckpointPlugin, Checkpoints

__all__ = ["CheckpointPlugin", "Checkpoints"]
