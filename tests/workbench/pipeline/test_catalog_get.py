"""`ModelCatalog.get` and `load`: get loads on first use, refuses a model unloaded on request until `load`,
and never waits for the catalogue's lock when the model is loaded (a load of another model holds that lock
for seconds). Pins the behaviour kept when `get` stopped repeating `load`'s double-checked fast path."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from workbench.pipeline.catalog import ModelCatalog
from workbench.pipeline.errors import ModelNotFoundError, ModelUnloadedError

ROOT = Path(__file__).resolve().parents[3]
DIGITS = ROOT / "models" / "digits" / "model.onnx"


@pytest.fixture
def catalog(tmp_path):
    file = tmp_path / "catalog.yaml"
    file.write_text(f"models:\n  - {{name: digits, format: onnx, path: {DIGITS}, task: classification}}\n")
    catalog = ModelCatalog(file, builtin_minilm=False)
    yield catalog
    catalog.close()


def test_get_loads_on_first_use_and_refuses_an_unloaded_model_until_load(catalog):
    assert not catalog.is_loaded("digits")
    entry = catalog.get("digits")
    assert catalog.is_loaded("digits") and catalog.get("digits") is entry
    assert catalog.unload("digits")
    for _ in range(2):
        with pytest.raises(ModelUnloadedError, match="model 'digits' was unloaded"):
            catalog.get("digits")
        assert not catalog.is_loaded("digits") and catalog.unloaded("digits")
    again = catalog.load("digits")
    assert again is not entry and catalog.get("digits") is again and not catalog.unloaded("digits")
    with pytest.raises(ModelNotFoundError):
        catalog.get("nope")


def test_get_of_a_loaded_model_does_not_wait_for_the_catalogue_lock(catalog):
    entry = catalog.get("digits")
    held, release = threading.Event(), threading.Event()

    def hold_lock() -> None:  # what a load of another (slow) model does
        with catalog._lock:
            held.set()
            release.wait(60)

    holder = threading.Thread(target=hold_lock, daemon=True)
    holder.start()
    assert held.wait(30)
    got: list[object] = []
    getter = threading.Thread(target=lambda: got.append(catalog.get("digits")), daemon=True)
    getter.start()
    getter.join(30)
    finished = not getter.is_alive()
    release.set()
    holder.join(30)
    assert finished and got == [entry]


def test_an_entry_registered_after_an_unload_is_served(catalog, tmp_path):
    catalog.get("digits")
    catalog.unload("digits")
    other = ModelCatalog(tmp_path / "catalog.yaml", builtin_minilm=False)
    entry = other.get("digits")
    catalog.register(entry)  # a script's own entry under the same name
    assert catalog.get("digits") is entry
    catalog.unload("digits")  # closes it
