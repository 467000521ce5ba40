"""Root of the `workbench` CLI: mounts one typer sub-app per command group."""

from __future__ import annotations

import typer

from workbench import __version__

app = typer.Typer(
    name="workbench",
    help="Hybrid rule-and-model inference workbench: rules (CLIPS/experta), models (PyTorch/ONNX Runtime), pipelines.",
    no_args_is_help=True,
    rich_markup_mode="rich",
    pretty_exceptions_enable=False,
)


@app.command()
def version() -> None:
    """Print the workbench version."""
    typer.echo(__version__)


def _mount() -> None:
    # One line per command group; each module defines `app` (a typer.Typer) or `register(app)`.
    from . import bench, doctor, kb

    doctor.register(app)
    app.add_typer(bench.app, name="bench", help="Benchmarks: print a table, --out writes JSON.")
    app.add_typer(kb.app, name="kb")
    # -- command groups added by the rooms below this line --
    from . import model

    app.add_typer(model.app, name="model")  # noqa: E702
    from . import pipeline

    app.add_typer(pipeline.app, name="pipeline")  # noqa: E702
    from . import run

    run.register(app)  # noqa: E702
    from . import runs

    app.add_typer(runs.app, name="runs")  # noqa: E702
    from . import serve

    serve.register(app)  # noqa: E702
    from . import tui

    tui.register(app)  # noqa: E702
    from . import demo

    app.add_typer(demo.app, name="demo")  # noqa: E702


_mount()


def main() -> None:
    """Console-script entry point."""
    app()
