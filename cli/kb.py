"""`workbench kb ...`: check, run, ask and explain knowledge bases (rule files)."""

from __future__ import annotations

import typer

app = typer.Typer(
    no_args_is_help=True, help="Knowledge bases: check, run (forward), ask (backward), explain, shell (CLIPS)."
)

# Each command module defines `register(app)`; one line per module below.
from . import kb_check

kb_check.register(app)  # noqa: E402
from . import kb_ask

kb_ask.register(app)  # noqa: E402
from . import kb_run

kb_run.register(app)  # noqa: E402
from . import kb_shell

kb_shell.register(app)  # noqa: E402
