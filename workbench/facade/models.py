"""Models of the `Workbench` facade: the catalogue, registration, loading, inference."""

from __future__ import annotations

from typing import Any


class ModelsMixin:
    """Models: catalogue entries, registered modules, loading, one-off inference."""

    def list_models(self) -> list[dict[str, Any]]:
        """Catalogue and registered models: loaded ones with `info()` (version, device, signature,
        batcher), others with their catalogue entry."""
        out = []
        specs = self.catalog.specs()
        for name in self.catalog.names():
            if self.catalog.is_loaded(name):
                info = self.catalog.get(name).info()
                info["loaded"] = True
            else:
                s = specs[name]
                info = {"name": name, "format": s.format, "task": s.task, "source": str(s.path), "loaded": False}
            out.append(info)
        return out

    def get_model(self, name: str) -> Any:
        """The loaded `neural.entry.ModelEntry`, loading it now if it is not (also after `unload_model`: this is
        the explicit load). Raises ModelNotFoundError, neural.errors.ModelLoadError."""
        return self.catalog.load(name)

    def register_model(self, name: str, module: Any, **kwargs: Any) -> Any:
        """Register an `nn.Module` for pipelines under `name`.

        kwargs as `neural.loaders.load_module`: `example_inputs={input_name: array}` (one batch,
        batch axis first; the signature is read from one forward pass) or `signature=`;
        `output_names=[...]` (default `output_0`, ... for tensors, the keys for a dict output);
        `dynamic_axes=`, `task=`, `device=`, `batcher_config=`. Returns the ModelEntry;
        `describe_model(name)` shows the input and output names, shapes and dtypes.
        """
        return self.catalog.register_module(name, module, **kwargs)

    def describe_model(self, name: str) -> dict[str, Any]:
        """Load a catalogue (or registered) model and describe it: the names pipelines use for its
        inputs and outputs, with shapes and dtypes.

        Returns `ModelEntry.info()`: `{"name", "version", "format", "task", "device", "dtype",
        "signature": {"inputs": [{"name", "datatype", "shape"}], "outputs": [...]}, "backend", ...}`
        (shape -1 is a dynamic axis; axis 0 is the batch). An `nn.Module` registered with
        `example_inputs` names its outputs `output_0`, `output_1`, ... unless `output_names=` is given.
        Raises ModelNotFoundError (naming the known models) or a neural load error.
        """
        return self.catalog.load(name).info()

    def register_model_entry(self, entry: Any) -> Any:
        """Register an already loaded `ModelEntry` (e.g. from `neural.loaders.load_onnx`)."""
        return self.catalog.register(entry)

    def unload_model(self, name: str) -> bool:
        """Drain and stop a loaded model's batcher and release it. A catalogue model stays unloaded until
        `get_model(name)` or `load_models` loads it: pipelines and `infer` that need it raise ModelUnloadedError
        meanwhile. Returns False when it was not loaded."""
        return self.catalog.unload(name)

    def load_models(self, names: list[str] | None = None) -> list[str]:
        """Load catalogue models now (default: all) so that `ready` becomes True; returns names loaded."""
        self._required_models = list(names) if names is not None else list(self.catalog.specs())
        return self.catalog.load_all(self._required_models)

    @property
    def ready(self) -> bool:
        """True once the models asked for by `load_models` (default: every catalogue entry) are loaded."""
        required = self._required_models if self._required_models is not None else list(self.catalog.specs())
        return all(self.catalog.is_loaded(n) for n in required)

    async def infer(self, name: str, item: Any, *, timeout_s: float | None = None) -> Any:
        """One request through the model's dynamic batcher (tensor models: `{input: array}`; text: a string).

        Raises ModelNotFoundError, ModelUnloadedError (unloaded by `unload_model`), neural.errors.InputValidationError,
        QueueFullError, RequestTimeoutError."""
        return await self.catalog.get(name).infer(item, timeout_s=timeout_s)

    def _model_loaded(self, entry: Any) -> None:
        sig = entry.signature.to_dict() if getattr(entry, "signature", None) is not None else {}
        try:
            self.store.save_model(entry.name, entry.version, entry.format, entry.task, sig)
        except Exception:  # recording the model row must never prevent serving it
            import logging

            logging.getLogger("workbench").exception("could not record model %s", entry.name)
