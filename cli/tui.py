"""`workbench tui [--url URL] [--screen NAME]`: the Textual terminal UI.

In-process by default (the `Workbench` facade with the current settings); `--url` attaches
to a running `workbench serve` over HTTP instead.
"""

from __future__ import annotations

import typer

SCREENS = ("pipelines", "kb", "run", "ask", "models", "history")


def register(app: typer.Typer) -> None:
    """Add the `tui` command to the root CLI."""

    @app.command("tui")
    def tui(
        url: str = typer.Option(
            None, "--url", help="Attach to a running `workbench serve` (e.g. http://127.0.0.1:8000)."
        ),
        screen: str = typer.Option("pipelines", "--screen", help=f"Screen to open first: {', '.join(SCREENS)}."),
        api_key: str = typer.Option(
            None,
            "--api-key",
            envvar="WORKBENCH_TUI_API_KEY",
            help="Bearer key for a server with WORKBENCH_API_KEYS set.",
        ),
    ) -> None:
        """Terminal UI: build pipelines, edit and run rules, consult, run and explain, watch models, browse runs."""
        if screen not in SCREENS:
            typer.echo(f"--screen {screen!r}: expected one of {', '.join(SCREENS)}", err=True)
            raise typer.Exit(2)
        from tui.app import WorkbenchApp
        from tui.backend import BackendError

        try:
            if url:
                from tui.http_backend import HttpBackend

                backend = HttpBackend(url, api_key=api_key)
                backend.ping(starting=True)
            else:
                from tui.inprocess_backend import InProcessBackend

                backend = InProcessBackend()
        except BackendError as exc:
            typer.echo(f"workbench tui: {exc}", err=True)
            raise typer.Exit(1) from exc
        except Exception as exc:  # a bad setting or an unreadable store: one clear line, no traceback
            typer.echo(f"workbench tui: {type(exc).__name__}: {exc}", err=True)
            raise typer.Exit(1) from exc
        try:
            WorkbenchApp(backend, mode=screen).run()
        finally:
            backend.close()
