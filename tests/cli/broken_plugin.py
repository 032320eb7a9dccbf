"""A plugin module with a defect: importing it fails (for the internal-error test)."""

raise RuntimeError("a defect in a plugin")
