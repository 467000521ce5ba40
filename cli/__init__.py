"""The `workbench` command line (typer).

Each command group lives in its own module of this package and is mounted in `app.py`.
"""

from .app import app, main

__all__ = ["app", "main"]
