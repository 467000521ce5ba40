"""Root of the `workbench` CLI: one typer group whose command modules load on first use."""

from __future__ import annotations

import sys

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


# Exceptions whose message is the whole story for a person at a terminal (the setting or the
# database and the reason): printed as one line, exit status 1, instead of a traceback.
USER_ERRORS = (
    ("workbench.config", "ConfigError"),
    ("workbench.store.database", "StoreError"),
    ("workbench.pipeline.catalog", "CatalogError"),  # a malformed models/catalog.yaml or NAME/config.yaml
)


def _user_error(exc: BaseException) -> bool:
    """True when `exc` is one of USER_ERRORS. Looked up in sys.modules, not imported: a command that
    raised one has imported its module, and `workbench kb check` must not pay for the store's imports."""
    kinds = tuple(
        kind
        for module, name in USER_ERRORS
        if (kind := getattr(sys.modules.get(module), name, None)) is not None and isinstance(kind, type)
    )
    return bool(kinds) and isinstance(exc, kinds)


def main() -> None:
    """Console-script entry point. An invalid setting (`ConfigError`), a database that cannot be
    used (`StoreError`) or a model catalogue file that cannot be read (`CatalogError`, naming the
    file) ends the command with `workbench: MESSAGE` on stderr and exit status 1."""
    try:
        app()
    except Exception as exc:
        if not _user_error(exc):
            raise
        typer.echo(f"workbench: {exc}", err=True)
        raise SystemExit(1) from None
