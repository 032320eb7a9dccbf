"""The tool-result pruner: old, large tool results lose their middle before compaction
summarises, often sparing the summary."""

from ._plugin import PrunerConfig, PrunerPlugin, prune, pruned_message

__all__ = ["PrunerConfig", "PrunerPlugin", "prune", "pruned_message"]
