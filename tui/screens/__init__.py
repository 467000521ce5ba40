"""Screens of the Workbench TUI: one module per screen or dialog, styles in .tcss beside them."""
