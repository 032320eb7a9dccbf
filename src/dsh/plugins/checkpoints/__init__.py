"""The checkpoint policy: flush sessions before model calls and tool bodies."""

from ._plugin import CheckpointPlugin, Checkpoints

__all__ = ["CheckpointPlugin", "Checkpoints"]
