"""The model registry: models by name and version, loaded from any supported format.

Other subsystems register through `register(entry)` (e.g. the generation engine with its own
backend object); files and modules through the `register_*` helpers, which build the entry.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any

from .entry import ModelEntry
from .errors import ModelLoadError, ModelNotFoundError
from .loaders import load_hf_dir, load_module, load_onnx, load_torch_export, load_torchscript

log = logging.getLogger("neural.registry")


class ModelRegistry:
    """Thread-safe map name -> versions -> `ModelEntry`; a name resolves to its latest registered version."""

    def __init__(self) -> None:
        self._models: dict[str, dict[str, ModelEntry]] = {}
        self._lock = threading.RLock()

    def register(self, entry: ModelEntry, *, replace: bool = False) -> ModelEntry:
        """Add `entry`. Registering an existing name+version raises ValueError unless `replace=True`
        (the old entry is then closed). A new version of a known name becomes the latest."""
        with self._lock:
            versions = self._models.setdefault(entry.name, {})
            old = versions.get(entry.version)
            if old is not None and not replace:
                raise ValueError(f"model {entry.name!r} version {entry.short_version} is already registered")
            versions.pop(entry.version, None)
            versions[entry.version] = entry
        if old is not None and old is not entry:
            old.close()
        log.info(
            "registered model %s (%s, %s, %s on %s/%s)",
            entry.name,
            entry.short_version,
            entry.format,
            entry.task,
            entry.device,
            entry.dtype,
        )
        return entry

    def get(self, name: str, version: str | None = None) -> ModelEntry:
        """The entry for `name` (latest version, or the one whose version starts with `version`).
        Raises ModelNotFoundError listing the known names/versions."""
        with self._lock:
            versions = self._models.get(name)
            if not versions:
                raise ModelNotFoundError(name, sorted(self._models))
            if version is None:
                return next(reversed(versions.values()))
            matches = [e for v, e in versions.items() if v.startswith(version)]
            if len(matches) != 1:
                raise ModelNotFoundError(f"{name}@{version}", [f"{name}@{v[:12]}" for v in versions])
            return matches[0]

    def __contains__(self, name: str) -> bool:
        return name in self._models

    def list(self) -> list[ModelEntry]:
        """Every registered entry (all versions), by name."""
        with self._lock:
            return [e for name in sorted(self._models) for e in self._models[name].values()]

    def names(self) -> list[str]:
        return sorted(self._models)

    def unregister(self, name: str, version: str | None = None) -> None:
        """Remove (and close) a model version, or all versions of `name`. Raises ModelNotFoundError."""
        entry = self.get(name, version)
        with self._lock:
            targets = [entry] if version else list(self._models[name].values())
            for e in targets:
                self._models[name].pop(e.version, None)
            if not self._models[name]:
                del self._models[name]
        for e in targets:
            e.close()

    def close(self) -> None:
        """Close every model (drain batchers, release backends)."""
        for e in self.list():
            e.close()

    def _add_or_keep(self, entry: ModelEntry) -> ModelEntry:
        # loading the same content twice keeps the entry already serving (and its batcher)
        with self._lock:
            existing = self._models.get(entry.name, {}).get(entry.version)
            if existing is None:
                return self.register(entry)
        entry.close()
        return existing

    # ---- builders -------------------------------------------------------------------------
    def register_hf_dir(self, path: str | Path, **kwargs: Any) -> ModelEntry:
        """Register a Hugging Face directory (see `neural.loaders.load_hf_dir` for the options)."""
        return self._add_or_keep(load_hf_dir(path, **kwargs))

    def register_onnx(self, path: str | Path, **kwargs: Any) -> ModelEntry:
        """Register an ONNX file (see `neural.loaders.load_onnx`)."""
        return self._add_or_keep(load_onnx(path, **kwargs))

    def register_torchscript(self, path: str | Path, **kwargs: Any) -> ModelEntry:
        """Register a TorchScript file (see `neural.loaders.load_torchscript`)."""
        return self._add_or_keep(load_torchscript(path, **kwargs))

    def register_torch_export(self, path: str | Path, **kwargs: Any) -> ModelEntry:
        """Register a `torch.export` program file (see `neural.loaders.load_torch_export`)."""
        return self._add_or_keep(load_torch_export(path, **kwargs))

    def register_module(self, module: Any, name: str, **kwargs: Any) -> ModelEntry:
        """Register an `nn.Module` from a script (see `neural.loaders.load_module`)."""
        return self._add_or_keep(load_module(module, name, **kwargs))

    def register_path(self, path: str | Path, **kwargs: Any) -> ModelEntry:
        """Register by what `path` is: a directory with config.json (HF), `.onnx`, `.pt2` (torch.export),
        `.pt`/`.pth`/`.ts`/`.jit` (TorchScript). Raises ModelLoadError for anything else."""
        p = Path(path)
        if p.is_dir():
            return self.register_hf_dir(p, **kwargs)
        suffix = p.suffix.lower()
        if suffix == ".onnx":
            return self.register_onnx(p, **kwargs)
        if suffix == ".pt2":
            return self.register_torch_export(p, **kwargs)
        if suffix in (".pt", ".pth", ".ts", ".jit"):
            return self.register_torchscript(p, **kwargs)
        if not p.exists():
            raise ModelLoadError(f"model path not found: {p}")
        raise ModelLoadError(
            f"{p}: unknown model format; accepted: HF directory, .onnx, .pt2 (torch.export), .pt/.ts (TorchScript)"
        )


_default: ModelRegistry | None = None
_default_lock = threading.Lock()


def default_registry() -> ModelRegistry:
    """The process-wide registry shared by the pipeline executor, API and TUI (empty until models are registered)."""
    global _default
    with _default_lock:
        if _default is None:
            _default = ModelRegistry()
        return _default
