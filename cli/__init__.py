"""The `workbench` command line (typer).

Each command group lives in its own module of this package and is mounted in `app.py`, which
imports a module only when its command runs. `main` sends the plain `workbench kb check FILE...`
through `cli.kb_check_fast.fast_main` and the plain `workbench kb ask FILE... GOAL [options]` through
`cli.kb_ask_run.fast_main`, which need no typer at all; for those command lines the typer app is
not even imported with the package (`app` then loads on first use).
"""

from __future__ import annotations

import sys

__all__ = ["app", "main"]


def _kb_check_command_line() -> bool:
    return sys.argv[1:3] in (["kb", "check"], ["kb", "ask"])


if not _kb_check_command_line():
    from .app import app


def main() -> None:
    """Console-script entry point. A reader that closes the pipe early (`| head`) ends the command
    quietly, as Unix tools do, instead of with a BrokenPipeError traceback."""
    try:
        _main()
    except BrokenPipeError:
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit's flush
        raise SystemExit(1) from None


def _main() -> None:
    if _kb_check_command_line():
        if sys.argv[2] == "ask":
            from .kb_ask_run import fast_main
        else:
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
