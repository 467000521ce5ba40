"""Reusable widgets of the Workbench TUI (one per module)."""
