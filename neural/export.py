"""Export a torch model to ONNX, verified against torch before anything is written.

The graph is exported to a temporary directory, loaded in ONNX Runtime (CPU provider), and run
on every example batch; the largest absolute difference from torch must be <= `atol` for every
output. Only then is the file moved to its destination. Exporter: the TorchScript-based
`torch.onnx.export(dynamo=False)` first (one self-contained file), then the `torch.export`-based
one (`dynamo=True`) if that fails. A `torch.export` program (`ExportedProgram`, a `.pt2` file) goes
to the `torch.export`-based exporter as it is (its dynamic dimensions are already in the program)
and is checked against `program.module()`: it is not an `nn.Module`, and the module it unlifts to
refuses `.eval()`/`.train()` (torch fixes a program's train/eval behaviour at export time).
"""

from __future__ import annotations

import logging
import shutil
import tempfile
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from .errors import ExportError
from .signature import Signature

log = logging.getLogger("neural.export")


@dataclass(slots=True)
class ExportReport:
    """What was written: the file, the exporter used, and the max |onnx - torch| per output."""

    path: Path
    exporter: str
    max_abs_diff: dict[str, float] = field(default_factory=dict)
    atol: float = 1e-4


def export_onnx(
    module: torch.nn.Module | torch.export.ExportedProgram,
    signature: Signature,
    examples: Sequence[dict[str, np.ndarray]],
    out: str | Path,
    *,
    atol: float = 1e-4,
    opset: int = 17,
) -> ExportReport:
    """Export `module` (called as `module(*inputs in signature order)`) to the ONNX file `out`.

    `module` may also be a `torch.export.ExportedProgram` (float32, CPU): it is exported with the
    `torch.export`-based exporter only, and checked against `module.module()`.

    `examples`: one or more batches `{input name: array}` (batch axis first); the first is traced,
    all are checked, so give examples of different batch sizes and lengths to exercise dynamic axes
    (declared as -1 in `signature`). Runs in float32 on CPU.
    `out`'s folder must exist: missing folders are not created (as the CLI's output options do not).
    Raises `ExportError` when `out` is a directory or its folder is missing or not a directory (before
    any export), when export fails, or when any output differs by more than `atol`; `out` is then not
    created.
    """
    if not examples:
        raise ValueError("export_onnx needs at least one example batch")
    out = Path(out)
    if out.is_dir():  # checked first: the move below would put the file inside it, under another name
        raise ExportError(f"{out}: is a directory; give the path of the ONNX file to write, e.g. {out / 'model.onnx'}")
    # missing folders are never created (the CLI's rule for every output option, cli/outputs.py)
    folder = out.parent
    if not folder.is_dir():
        if folder.exists():
            raise ExportError(f"{out}: cannot write there: {folder} is not a directory")
        for parent in folder.parents:  # a file above it makes the path impossible, not just missing
            if parent.exists():
                if not parent.is_dir():
                    raise ExportError(f"{out}: cannot write there: {parent} is not a directory")
                break
        raise ExportError(f"{out}: the folder {folder} does not exist (missing folders are not created)")
    program = module if isinstance(module, torch.export.ExportedProgram) else None
    if program is not None:
        reference = program.module()  # a GraphModule that refuses .eval(): the program fixed that at export
        exporters: tuple[str, ...] = ("dynamo",)
    else:
        module = reference = module.eval().to("cpu", torch.float32)
        exporters = ("torchscript", "dynamo")
    names = signature.input_names
    first = tuple(torch.from_numpy(np.ascontiguousarray(examples[0][n])) for n in names)
    dynamic_axes = _dynamic_axes(signature)
    with tempfile.TemporaryDirectory(prefix="neural-export-") as tmp:
        tmp_file = Path(tmp) / out.name
        errors: list[str] = []
        exporter = ""
        for exporter in exporters:
            try:
                _export(module, first, tmp_file, signature, dynamic_axes, exporter, opset)
                break
            except Exception as exc:  # try the other exporter, report both if neither works
                errors.append(f"{exporter}: {type(exc).__name__}: {str(exc).splitlines()[0][:300]}")
                for p in Path(tmp).iterdir():
                    p.unlink()
        else:
            tried = "with both exporters" if len(errors) > 1 else "with the torch.export-based exporter"
            raise ExportError(f"ONNX export failed {tried}: " + " | ".join(errors))
        diffs = _check(reference, tmp_file, signature, examples, atol)
        try:
            for p in Path(tmp).iterdir():  # the .onnx file and, for the dynamo exporter, its external data
                shutil.move(str(p), out.parent / p.name)
        except OSError as exc:
            raise ExportError(f"{out}: cannot write the ONNX file: {exc.strerror or exc}") from None
    log.info("exported %s with the %s exporter; max |onnx - torch| = %s", out, exporter, diffs)
    return ExportReport(out, exporter, diffs, atol)


def _dynamic_axes(signature: Signature) -> dict[str, dict[int, str]]:
    axes: dict[str, dict[int, str]] = {}
    for spec in (*signature.inputs, *signature.outputs):
        for i, d in enumerate(spec.shape):
            if d == -1:
                label = (spec.dims[i] if spec.dims and spec.dims[i] else None) or (
                    "batch" if i == 0 else f"{spec.name}_dim{i}"
                )
                axes.setdefault(spec.name, {})[i] = label
    return axes


def _export(module, args, path: Path, signature: Signature, dynamic_axes, exporter: str, opset: int) -> None:
    # the torch.export-based exporter logs a warning per torchvision op it skips when torchvision is absent
    registration = logging.getLogger("torch.onnx._internal.exporter._registration")
    level = registration.level
    registration.setLevel(logging.ERROR)
    try:
        _export_with(module, args, path, signature, dynamic_axes, exporter, opset)
    finally:
        registration.setLevel(level)


def _export_with(module, args, path: Path, signature: Signature, dynamic_axes, exporter: str, opset: int) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if exporter == "torchscript":
            torch.onnx.export(
                module,
                args,
                str(path),
                input_names=signature.input_names,
                output_names=signature.output_names,
                dynamic_axes=dynamic_axes,
                opset_version=opset,
                dynamo=False,
            )
        else:
            dims: dict[str, torch.export.Dim] = {}
            shapes = {}
            for spec in signature.inputs:
                shapes[spec.name] = {
                    i: dims.setdefault(label, torch.export.Dim(label.replace(" ", "_")))
                    for i, label in dynamic_axes.get(spec.name, {}).items()
                }
            torch.onnx.export(
                module,
                args,
                str(path),
                input_names=signature.input_names,
                output_names=signature.output_names,
                # a program carries its own dynamic dimensions; the exporter uses it as it is
                dynamic_shapes=None if isinstance(module, torch.export.ExportedProgram) else shapes,
                dynamo=True,
                verbose=False,
            )


def _check(module, path: Path, signature: Signature, examples, atol: float) -> dict[str, float]:
    import onnxruntime as ort

    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    diffs: dict[str, float] = {n: 0.0 for n in signature.output_names}
    for k, ex in enumerate(examples):
        feeds = {n: np.ascontiguousarray(ex[n]) for n in signature.input_names}
        with torch.no_grad():
            ref: Any = module(*(torch.from_numpy(feeds[n]) for n in signature.input_names))
        refs = [ref] if isinstance(ref, torch.Tensor) else list(ref)
        got = sess.run(signature.output_names, feeds)
        for name, r, g in zip(signature.output_names, refs, got):
            r = r.float().numpy()
            if r.shape != g.shape:
                raise ExportError(
                    f"output {name!r} on example {k}: onnx shape {list(g.shape)} != torch shape {list(r.shape)}"
                )
            d = float(np.max(np.abs(r - g))) if r.size else 0.0
            diffs[name] = max(diffs[name], d)
            if not d <= atol:
                raise ExportError(
                    f"output {name!r} on example {k}: max |onnx - torch| = {d:.3g} > atol {atol:g}; nothing written"
                )
    return diffs


def export_entry(entry: Any, out: str | Path, *, atol: float = 1e-4) -> ExportReport:
    """Export a registered torch model (`ModelEntry` with a `TorchBackend`) to ONNX, checked against torch.

    Text models are checked on tokenised example sentences; tensor models on random inputs built
    from the signature (batch sizes 2 and 3, other dynamic axes 5 and 7; integer inputs zero).
    Raises ExportError (nothing written) or ValueError when the model is not a float32 torch model.
    """
    from .backends import TorchBackend

    backend = entry.backend
    if not isinstance(backend, TorchBackend):
        raise ValueError(
            f"model {entry.name!r} runs on {getattr(backend, 'kind', type(backend).__name__)}; only torch models can "
            "be exported"
        )
    if backend.dtype != "float32" or backend.compiled:
        raise ValueError(
            f"model {entry.name!r}: export the float32, uncompiled model (it is {backend.dtype}, "
            f"compiled={backend.compiled})"
        )
    tokenizer = getattr(entry.runner, "tokenizer", None)
    if tokenizer is not None:
        from .loaders import tokenizer_examples

        examples = [tokenizer_examples(tokenizer, n) for n in (2, 3)]
    else:
        examples = [_random_inputs(entry.signature, b, n, seed) for seed, (b, n) in enumerate(((2, 5), (3, 7)))]
    # a torch.export program is exported as the program, not as the GraphModule the backend runs
    module = backend.program if backend.program is not None else backend.module
    return export_onnx(module, entry.signature, examples, out, atol=atol)


def _random_inputs(signature: Signature, batch: int, dyn: int, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    out = {}
    for spec in signature.inputs:
        shape = [batch if i == 0 else (dyn if d == -1 else d) for i, d in enumerate(spec.shape)]
        if spec.dtype.startswith(("float", "bfloat")):
            out[spec.name] = rng.standard_normal(shape).astype(np.float32)
        elif spec.dtype == "bool":
            out[spec.name] = np.ones(shape, dtype=bool)
        else:
            out[spec.name] = np.zeros(shape, dtype=spec.dtype)
    return out
