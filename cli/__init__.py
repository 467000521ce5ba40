"""The `workbench` command line (typer).

Each command group lives in its own module of this package and is mounted in `app.py`, which
imports a module only when its command runs. `main` sends the plain `workbench kb check FILE...`
through `cli.kb_check_fast.fast_main`, which needs no typer at all; for that command line the
typer app is not even imported with the package (`app` then loads on first use).
"""

from __future__ import annotations

import sys

__all__ = ["app", "main"]


def _kb_check_command_line() -> bool:
    return sys.argv[1:3] == ["kb", "check"]


if not _kb_check_command_line():
    from .app import app


def main() -> None:
    """Console-script entry point."""
    if _kb_check_command_line():
        from .kb_check_fast import fast_main

        code = fast_main(sys.argv[3:])
        if code is not None:
            sys.stdout.flush()
            raise SystemExit(code)
    from .app import main as typer_main

    typer_main()


def __getattr__(name: str):
    if name == "app":
        from .app import app

        return app
    raise AttributeError(f"module 'cli' has no attribute {name!r}")
