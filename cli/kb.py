"""`workbench kb ...`: check, run, ask and explain knowledge bases (rule files).

Each command module defines `register(app)`; they are imported only when their command runs
(`cli.lazy`), so `kb check` loads no forward or backward chainer.
"""

from __future__ import annotations

import typer

from .lazy import lazy_group

COMMANDS: dict[str, tuple[str, str, str]] = {
    "check": ("cli.kb_check", "register", ""),
    "ask": ("cli.kb_ask", "register", ""),
    "explain": ("cli.kb_ask", "register", ""),
    "run": ("cli.kb_run", "register", ""),
    "test": ("cli.kb_test", "register", ""),
    "show": ("cli.kb_show", "register", ""),
    "shell": ("cli.kb_shell", "register", ""),
}

app = typer.Typer(
    no_args_is_help=True,
    help="Knowledge bases: check, run (forward), ask (backward), explain, test (scenarios), show, shell (CLIPS).",
    cls=lazy_group(COMMANDS),
)
