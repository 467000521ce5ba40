"""Root of the `workbench` CLI: one typer group whose command modules load on first use."""

from __future__ import annotations

import typer

from workbench import __version__

from .lazy import lazy_group

# name -> (module, "app" | "register", help). A module is imported only when its command runs
# (cli/lazy.py), so `workbench kb check` does not pay for the model runtime, API or store.
COMMANDS: dict[str, tuple[str, str, str]] = {
    "doctor": ("cli.doctor", "register", ""),
    "bench": ("cli.bench", "app", "Benchmarks: print a table, --out writes JSON."),
    "kb": ("cli.kb", "app", ""),
    # -- command groups added by the rooms below this line --
    "model": ("cli.model", "app", ""),
    "pipeline": ("cli.pipeline", "app", ""),
    "run": ("cli.run", "register", ""),
    "runs": ("cli.runs", "app", ""),
    "serve": ("cli.serve", "register", ""),
    "tui": ("cli.tui", "register", ""),
    "demo": ("cli.demo", "app", ""),
}

app = typer.Typer(
    name="workbench",
    help="Hybrid rule-and-model inference workbench: rules (CLIPS/experta), models (PyTorch/ONNX Runtime), pipelines.",
    no_args_is_help=True,
    rich_markup_mode="rich",
    pretty_exceptions_enable=False,
    cls=lazy_group(COMMANDS),
)


@app.callback()
def _root() -> None:
    # A callback keeps the root a group while `version` is its only eagerly registered command.
    pass


@app.command()
def version() -> None:
    """Print the workbench version."""
    typer.echo(__version__)


def main() -> None:
    """Console-script entry point."""
    app()
