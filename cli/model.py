"""`workbench model list|info|export`: the models the neural runtime can load, and ONNX export."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from .outputs import FILE_HELP, FOLDER_HELP, check_output_file, check_output_folder

app = typer.Typer(
    no_args_is_help=True,
    help="Models: list the catalogue, describe one, add a folder to the repository, export to ONNX.",
)
console = Console()


def _load(name_or_path: str, device: str | None):
    from neural import ModelRegistry
    from neural.catalog import load

    registry = ModelRegistry()
    kwargs = {"device": device} if device else {}
    path = Path(name_or_path)
    if path.exists():
        return registry.register_path(path, **kwargs)
    return load(name_or_path, registry, **kwargs)


def _fail(exc: Exception) -> None:
    typer.echo(f"error: {exc}", err=True)
    raise typer.Exit(1)


@app.command(
    "list",
    help="List the models that load by name (name, task, format, version = SHA-256 of the weights, source): "
    "the built-ins, then the model catalogue (`models/catalog.yaml` and the repositories beside it).",
)
def list_models(as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False) -> None:
    """List the models that load by name (name, task, format, version = SHA-256 of the weights, source):
    the built-ins, then the model catalogue (`models/catalog.yaml` and the repositories beside it)."""
    from neural import catalog, hash_files
    from workbench.pipeline.catalog import ModelCatalog
    from workbench.workbench import default_model_catalog

    rows = []
    for spec in ModelCatalog(default_model_catalog(), builtin_minilm=False).specs().values():
        path = spec.path
        weights = sorted(path.glob("*.safetensors")) if path.is_dir() else [path] if path.is_file() else []
        rows.append(
            {
                "name": spec.name,
                "task": spec.task or "",
                "format": spec.format,
                "weights_version": hash_files(weights, path if path.is_dir() else path.parent)[:12] if weights else "",
                "source": str(path),
                "description": "model catalogue"
                + (f" ({path.parent.name} version {path.name})" if path.name.isdigit() else ""),
            }
        )
    for item in catalog():
        path = item.path()
        weights = sorted(path.glob("*.safetensors")) if path.is_dir() else [path]
        rows.append(
            {
                "name": item.name,
                "task": item.task,
                "format": item.format,
                "weights_version": hash_files(weights, path if path.is_dir() else path.parent)[:12],
                "source": str(path),
                "description": item.description,
            }
        )
    rows += _pipeline_catalogue_rows({r["name"] for r in rows})
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    table = Table(title="models")
    for col in ("name", "task", "format", "weights_version"):
        table.add_column(col, no_wrap=True)
    table.add_column("description")
    for row in rows:
        table.add_row(*(row[c] for c in ("name", "task", "format", "weights_version", "description")))
    console.print(table)
    console.print(
        "Any HF directory, .onnx, .pt2 or TorchScript file also works as NAME in `model info` / `model export`."
    )


@app.command()
def info(
    name: Annotated[str, typer.Argument(help="Catalogue name or a model path.")],
    device: Annotated[str | None, typer.Option("--device", help="auto | cpu | cuda")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Load a model and describe it: version, format, task, device, dtype, signature, backend."""
    from neural import NeuralError
    from neural.errors import ModelNotFoundError

    try:
        entry = _load(name, device)
        doc = entry.info()
        entry.close()
    except ModelNotFoundError:
        doc = _describe_pipeline_model(name, device)
    except (NeuralError, ValueError) as exc:
        _fail(exc)
    if as_json:
        typer.echo(json.dumps(doc, indent=2, default=str))
        return
    console.print(f"[bold]{doc['name']}[/]  version {doc['version']}")
    console.print(f"task {doc['task']}, format {doc['format']}, device {doc['device']}, dtype {doc['dtype']}")
    console.print(f"backend {json.dumps(doc['backend'], default=str)}")
    if doc["signature"]:
        table = Table(title="signature")
        for col in ("", "name", "datatype", "shape"):
            table.add_column(col)
        for kind in ("inputs", "outputs"):
            for spec in doc["signature"][kind]:
                table.add_row(kind[:-1], spec["name"], spec["datatype"], str(spec["shape"]))
        console.print(table)


def _pipeline_catalogue_rows(seen: set[str]) -> list[dict]:
    """The models of the pipelines' catalogue (models/catalog.yaml) that the built-in list lacks."""
    from neural import hash_files
    from workbench import Workbench

    rows = []
    with Workbench.open() as wb:
        for name, spec in wb.catalog.specs().items():
            if name in seen:
                continue
            path = spec.path
            weights = sorted(path.glob("*.safetensors")) if path.is_dir() else [path]
            rows.append(
                {
                    "name": name,
                    "task": spec.task or "",
                    "format": spec.format,
                    "weights_version": hash_files(weights, path if path.is_dir() else path.parent)[:12]
                    if path.exists()
                    else "missing",
                    "source": str(path),
                    "description": "pipeline catalogue (models/catalog.yaml)",
                }
            )
    return rows


def _describe_pipeline_model(name: str, device: str | None) -> dict:
    """A model of the pipelines' catalogue (models/catalog.yaml), described as `workbench run` loads it."""
    from neural import NeuralError, catalog
    from workbench import Workbench
    from workbench.pipeline import NotFoundError

    try:
        with Workbench.open(**({"device": device} if device else {})) as wb:
            known = sorted({item.name for item in catalog()} | set(wb.catalog.names()))
            return wb.describe_model(name)
    except NotFoundError:
        _fail(ValueError(f"no model named {name!r}; known models: {', '.join(known)} (or give a model path)"))
    except (NeuralError, ValueError) as exc:
        _fail(exc)
    raise AssertionError("unreachable")


@app.command()
def export(
    name: Annotated[str, typer.Argument(help="Catalogue name or a model path (a torch model).")],
    onnx: Annotated[Path, typer.Option("--onnx", help=f"Write the ONNX file here. {FILE_HELP}")],
    atol: Annotated[float, typer.Option("--atol", help="Largest |onnx - torch| accepted.")] = 1e-4,
) -> None:
    """Export a torch model to ONNX; the file is written only if ONNX Runtime matches torch within --atol."""
    from neural import NeuralError, export_entry
    from neural.errors import ModelNotFoundError

    check_output_file("--onnx", onnx, "ONNX file")  # before loading and exporting
    try:
        try:
            entry = _load(name, "cpu")
        except ModelNotFoundError as exc:
            entry = _load_catalogue_file(name, exc)
        report = export_entry(entry, onnx, atol=atol)
    except (NeuralError, ValueError) as exc:
        _fail(exc)
    entry.close()
    diffs = ", ".join(f"{k} {v:.2e}" for k, v in report.max_abs_diff.items())
    typer.echo(f"wrote {report.path} ({report.exporter} exporter); max |onnx - torch|: {diffs} <= {atol:g}")


def _load_catalogue_file(name: str, not_found: Exception):
    """A model of the pipelines' catalogue (models/catalog.yaml and the repositories beside it),
    registered from its file or folder under its catalogue name, as `model list` shows it. Raises
    ValueError naming every model that loads by name when `name` is none of them."""
    from neural import ModelRegistry, catalog
    from workbench.pipeline.catalog import ModelCatalog
    from workbench.workbench import default_model_catalog

    specs = ModelCatalog(default_model_catalog(), builtin_minilm=False).specs()
    if name not in specs:
        known = sorted({item.name for item in catalog()} | set(specs))
        raise ValueError(f"no model named {name!r}; known models: {', '.join(known)} (or give a model path)") from (
            not_found
        )
    return ModelRegistry().register_path(specs[name].path, name=name, device="cpu")


@app.command(
    "add",
    help="Register a folder in the model repository in Triton's layout: NAME/config.yaml and a new numbered "
    "version NAME/N/ holding a copy of the folder. Pipelines, `serve` and the TUI then find the model by name "
    "(the highest version is served unless config.yaml pins `version`).",
)
def add(
    folder: Annotated[Path, typer.Argument(help="A Hugging Face model folder (config.json + weights + tokenizer).")],
    name: Annotated[str | None, typer.Option("--name", help="Model name (default: the folder's name).")] = None,
    repository: Annotated[
        Path | None,
        typer.Option(
            "--repository", help=f"Model repository folder (default: beside the catalogue, models/). {FOLDER_HELP}"
        ),
    ] = None,
) -> None:
    """Register a folder in the model repository in Triton's layout: NAME/config.yaml and a new
    numbered version NAME/N/ holding a copy of the folder. Pipelines, `serve` and the TUI then
    find the model by name (the highest version is served unless config.yaml pins `version`)."""
    import shutil

    import yaml

    from neural.generation.model_config import is_causal_lm
    from workbench.pipeline.spec import NAME_RE
    from workbench.workbench import default_model_catalog

    if not (folder / "config.json").is_file():
        _fail(ValueError(f"{folder}: not a Hugging Face model folder (no config.json)"))
    name = name or folder.resolve().name
    if not NAME_RE.match(name):
        _fail(ValueError(f"model name {name!r}: use letters, digits, '_', '-', '.' (not starting with a symbol)"))
    check_output_folder("--repository", repository)
    repo = repository or default_model_catalog().parent
    root = repo / name
    cfg = root / "config.yaml"
    try:
        known = yaml.safe_load(cfg.read_text()) if cfg.is_file() else None
        cfg_json = json.loads((folder / "config.json").read_text())
    except (OSError, ValueError, yaml.YAMLError) as exc:
        _fail(ValueError(f"{cfg if cfg.is_file() else folder / 'config.json'}: cannot read it ({exc})"))
    archs = cfg_json.get("architectures") or [] if isinstance(cfg_json, dict) else []
    task = (known or {}).get("task") if isinstance(known, dict) else None
    task = task or (
        "causal-lm"
        if is_causal_lm(folder)
        else "classification"
        if any(str(a).endswith("ForSequenceClassification") for a in archs)
        else "embedding"
    )
    _check_loads(folder, name, task)  # before anything is written: `serve` loads every catalogue model at start
    repo.mkdir(exist_ok=True)  # its parent exists (checked): missing folders above it are not created
    root.mkdir(exist_ok=True)
    versions = [int(d.name) for d in root.iterdir() if d.is_dir() and d.name.isdigit()]
    version = max(versions, default=0) + 1
    target = root / str(version)
    shutil.copytree(folder, target, ignore=shutil.ignore_patterns(".*", "__pycache__"))
    if known is None:
        cfg.write_text(yaml.safe_dump({"name": name, "format": "hf", "task": task}, sort_keys=False))
    typer.echo(f"added {name} version {version}: {target}")


def _check_loads(folder: Path, name: str, task: str) -> None:
    """Load `folder` on the CPU as the catalogue will load it (format hf, `task`); exit 1 naming why it does
    not load (n16: a folder with pickled `.bin` weights was added, then `serve` refused to start)."""
    from neural import NeuralError
    from workbench.pipeline.catalog import CatalogEntry, CatalogError, ModelCatalog

    probe = ModelCatalog(device="cpu", builtin_minilm=False)
    try:
        entry = probe.load_spec(CatalogEntry(name=name, format="hf", path=folder.resolve(), task=task))
    except (NeuralError, CatalogError, ValueError, OSError) as exc:
        _fail(ValueError(f"{folder}: not added: it does not load (format hf, task {task}): {exc}"))
    close = getattr(entry, "close", None)
    if close is not None:
        close()
