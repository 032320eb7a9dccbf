"""The checkpoint policy: flush sessions before model calls and tool bodies."""

from ._plugin import CheckpointConfig, CheckpointPlugin, Checkpoints

__all__ = ["CheckpointConfig", "CheckpointPlugin", "Checkpoints"]
