"""`workbench kb ...`: check, run, ask and explain knowledge bases (rule files)."""

from __future__ import annotations

import typer

from . import kb_ask, kb_check, kb_run, kb_show, kb_test

app = typer.Typer(
    no_args_is_help=True, help="Knowledge bases: check, run (forward), ask (backward), explain, test (scenarios), show."
)

# Each command module defines `register(app)`; one line per module below.
kb_check.register(app)
kb_ask.register(app)
kb_run.register(app)
kb_test.register(app)
kb_show.register(app)
