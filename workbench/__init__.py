"""Workbench core: pipeline graph and executor, run store, configuration, CLI, scripting API."""

__version__ = "0.1.0"
