"""Build `ModelEntry`s from files: Hugging Face directories, ONNX, TorchScript, torch.export, nn.Module."""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch

from .backends import OnnxBackend, TorchBackend
from .batching import BatcherConfig
from .device import resolve_device
from .entry import ModelEntry
from .errors import ModelLoadError
from .export import export_onnx
from .hashing import hash_files, hash_module
from .runner import TensorRunner
from .signature import Signature, TensorSpec, torch_dtype_name
from .text import (
    SentenceEmbedding,
    SequenceClassification,
    TextClassificationRunner,
    TextEmbeddingRunner,
    TextTokenizer,
    classification_signature,
    embedding_signature,
)

log = logging.getLogger("neural.loaders")

SIGNATURE_EXTRA_FILE = "workbench_signature.json"
_CAUSAL = ("ForCausalLM", "LMHeadModel")


# ---- Hugging Face directories -------------------------------------------------------------------
def load_hf_dir(
    path: str | Path,
    *,
    name: str | None = None,
    task: str | None = None,
    backend: str = "torch",
    device: str | None = None,
    dtype: str | None = None,
    compile: bool = False,
    batcher_config: BatcherConfig | None = None,
    onnx_cache_dir: str | Path | None = None,
    intra_op_threads: int = 0,
    micro_batch_overhead_tokens: float | None | str = "auto",
) -> ModelEntry:
    """Load a Hugging Face directory (config.json + *.safetensors + tokenizer.json) as a text model.

    `task`: "embedding" (sentence-transformers pooling/normalisation read from `1_Pooling/config.json`
    and `modules.json`; mean pooling and normalisation otherwise) or "classification"
    (`*ForSequenceClassification`); default: classification when config.json names such an
    architecture, else embedding. Causal LMs are served by the generation engine, which registers
    them itself. `backend="onnxruntime"` exports the torch model to ONNX (checked against torch,
    cached under `onnx_cache_dir` by weights version) and serves that file.
    `micro_batch_overhead_tokens`: "auto" splits each batch into length-homogeneous micro-batches on
    CPU (per-call overhead taken as 48 tokens for torch, 24 for ONNX Runtime: measured here, about
    60 ms per call vs 1.3 ms per token for eager torch on one loaded core) and never on CUDA;
    None never splits; a number sets the overhead (see `neural.text.microbatch`).
    Version: SHA-256 of the safetensors files. Raises ModelLoadError naming the missing file.
    """
    root = Path(path)
    config_file = root / "config.json"
    for required in (config_file, root / "tokenizer.json"):
        if not required.is_file():
            raise ModelLoadError(f"{root}: not a Hugging Face model directory: {required.name} is missing")
    weights = sorted(root.glob("*.safetensors"))
    if not weights:
        raise ModelLoadError(f"{root}: no *.safetensors weights found (pickled .bin weights are not loaded)")
    config = json.loads(config_file.read_text())
    archs = config.get("architectures") or []
    if any(a.endswith(_CAUSAL) for a in archs) and task in (None, "causal-lm"):
        raise ModelLoadError(f"{root}: {archs[0]} is a causal LM; register it through the generation engine")
    task = task or ("classification" if any(a.endswith("ForSequenceClassification") for a in archs) else "embedding")
    if task not in ("embedding", "classification"):
        raise ModelLoadError(
            f"{root}: task {task!r} is not supported for HF directories here; use embedding or classification"
        )
    name = name or root.name
    version = hash_files(weights, root)
    max_length = _max_length(root, config)
    tokenizer = TextTokenizer(root / "tokenizer.json", max_length, model=name)
    module, signature, extra = _hf_module(root, config, task)
    dev = resolve_device(device)
    if backend == "torch":
        be = TorchBackend(module, signature, device=dev, dtype=dtype, compile=compile)
        fmt, src, ver = "hf", str(root), version
    elif backend == "onnxruntime":
        cache = Path(onnx_cache_dir) if onnx_cache_dir else default_onnx_cache()
        onnx_file = cache / f"{name}-{version[:16]}-torch{torch.__version__.split('+')[0]}.onnx"
        if not onnx_file.is_file():
            cache.mkdir(parents=True, exist_ok=True)  # the library's own cache folder, not an output the caller named
            examples = [tokenizer_examples(tokenizer, n) for n in (2, 3)]
            export_onnx(module, signature, examples, onnx_file, atol=1e-4)
        be = OnnxBackend(onnx_file, device=dev, intra_op_threads=intra_op_threads)
        fmt, src, ver = "onnx", str(onnx_file), hash_files([onnx_file], onnx_file.parent)
        extra["exported_from"] = {"source": str(root), "version": version}
    else:
        raise ValueError(f"unknown backend {backend!r}; accepted: torch, onnxruntime")
    split = micro_batch_overhead_tokens
    if split == "auto":
        split = None if be.device.startswith("cuda") else (48.0 if backend == "torch" else 24.0)
    if task == "embedding":
        runner: Any = TextEmbeddingRunner(tokenizer, be, split)
    else:
        runner = TextClassificationRunner(
            tokenizer, be, {int(k): v for k, v in config.get("id2label", {}).items()}, split
        )
    extra["micro_batch_overhead_tokens"] = split
    if batcher_config is None:
        # with micro-batches the runner handles lengths itself: batch everything queued together
        batcher_config = BatcherConfig(buckets=None) if split is not None else BatcherConfig()
    extra.update({"max_length": max_length, "architectures": archs, "weights": [w.name for w in weights]})
    return ModelEntry(
        name, ver, fmt, task, signature, be.device, be.dtype, be, runner, src, extra, batcher_config or BatcherConfig()
    )


def _max_length(root: Path, config: dict) -> int:
    st = root / "sentence_bert_config.json"
    if st.is_file():
        value = json.loads(st.read_text()).get("max_seq_length")
        if value:
            return int(value)
    tok_cfg = root / "tokenizer_config.json"
    if tok_cfg.is_file():
        value = json.loads(tok_cfg.read_text()).get("model_max_length")
        if isinstance(value, int) and value < 100_000:
            return value
    return int(config.get("max_position_embeddings", 512))


def _hf_module(root: Path, config: dict, task: str) -> tuple[torch.nn.Module, Signature, dict[str, Any]]:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from transformers import AutoModel, AutoModelForSequenceClassification
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    kwargs = dict(local_files_only=True, attn_implementation="sdpa")
    if task == "classification":
        model = AutoModelForSequenceClassification.from_pretrained(str(root), **kwargs).eval()
        return (
            SequenceClassification(model),
            classification_signature(model.config.num_labels),
            {"id2label": model.config.id2label},
        )
    encoder = AutoModel.from_pretrained(str(root), **kwargs).eval()
    pooling, normalize = "mean", True
    pool_cfg = root / "1_Pooling" / "config.json"
    if pool_cfg.is_file():
        pc = json.loads(pool_cfg.read_text())
        pooling = "cls" if pc.get("pooling_mode_cls_token") else "max" if pc.get("pooling_mode_max_tokens") else "mean"
    modules_file = root / "modules.json"
    if modules_file.is_file():
        normalize = any(m.get("type", "").endswith("Normalize") for m in json.loads(modules_file.read_text()))
    dim = int(config["hidden_size"])
    return (
        SentenceEmbedding(encoder, pooling, normalize),
        embedding_signature(dim),
        {"pooling": pooling, "normalize": normalize},
    )


def tokenizer_examples(tokenizer: TextTokenizer, n: int) -> dict[str, np.ndarray]:
    """A padded example batch of `n` texts of different lengths (for export and its numerics check)."""
    from .text import pad_batch

    words = "the quick brown fox jumps over the lazy dog while rules decide what the model may say".split()
    texts = [" ".join(words[: 3 + 5 * i]) for i in range(n)]
    return pad_batch(tokenizer.encode_batch(texts), None, tokenizer.pad_id)


def default_onnx_cache() -> Path:
    """Where exported ONNX files are kept: $WORKBENCH_ONNX_CACHE or the user cache directory."""
    env = os.environ.get("WORKBENCH_ONNX_CACHE")
    if env:
        return Path(env)
    import platformdirs

    return Path(platformdirs.user_cache_dir("workbench")) / "onnx"


# ---- ONNX -----------------------------------------------------------------------------------------
def load_onnx(
    path: str | Path,
    *,
    name: str | None = None,
    task: str = "custom",
    device: str | None = None,
    batcher_config: BatcherConfig | None = None,
    intra_op_threads: int = 0,
    padding_safe: bool = False,
) -> ModelEntry:
    """Load an ONNX file; the signature comes from the graph. `padding_safe=True` declares that the
    model masks zero padding on its sequence axis (else only equal-length requests share a batch).
    Version: SHA-256 of the file (and of its external-data files). Raises ModelLoadError for a
    missing or invalid file."""
    path = Path(path)
    if not path.is_file():
        raise ModelLoadError(f"ONNX file not found: {path}")
    try:
        be = OnnxBackend(path, device=device, intra_op_threads=intra_op_threads)
    except Exception as exc:
        raise ModelLoadError(f"{path}: not a loadable ONNX model: {str(exc).splitlines()[0]}") from exc
    data = [p for p in path.parent.glob(path.name + ".data")]
    return ModelEntry(
        name or path.stem,
        hash_files([path, *data], path.parent),
        "onnx",
        task,
        be.signature,
        be.device,
        be.dtype,
        be,
        TensorRunner(name or path.stem, be, padding_safe=padding_safe),
        str(path),
        {"providers": be.providers},
        batcher_config or BatcherConfig(),
    )


# ---- TorchScript and torch.export ---------------------------------------------------------------
def save_torchscript(module: torch.jit.ScriptModule, path: str | Path, signature: Signature) -> None:
    """`torch.jit.save` with the signature stored inside the file (read back by `load_torchscript`)."""
    torch.jit.save(module, str(path), _extra_files={SIGNATURE_EXTRA_FILE: json.dumps(signature.to_dict())})


def load_torchscript(
    path: str | Path,
    *,
    name: str | None = None,
    task: str = "custom",
    signature: Signature | None = None,
    device: str | None = None,
    dtype: str | None = None,
    batcher_config: BatcherConfig | None = None,
    padding_safe: bool = False,
) -> ModelEntry:
    """Load a TorchScript file. Its signature is read from the file (see `save_torchscript`) or given.
    Raises ModelLoadError when the file is unreadable or carries no signature and none is given."""
    path = Path(path)
    if not path.is_file():
        raise ModelLoadError(f"TorchScript file not found: {path}")
    extra = {SIGNATURE_EXTRA_FILE: ""}
    try:
        module = torch.jit.load(str(path), map_location="cpu", _extra_files=extra)
    except Exception as exc:
        raise ModelLoadError(f"{path}: not a TorchScript file: {str(exc).splitlines()[0]}") from exc
    if signature is None:
        if not extra[SIGNATURE_EXTRA_FILE]:
            raise ModelLoadError(f"{path}: TorchScript file carries no signature; pass signature=Signature(...)")
        signature = signature_from_dict(json.loads(extra[SIGNATURE_EXTRA_FILE]))
    be = TorchBackend(module, signature, device=device, dtype=dtype)
    name = name or path.stem
    return ModelEntry(
        name,
        hash_files([path], path.parent),
        "torchscript",
        task,
        signature,
        be.device,
        be.dtype,
        be,
        TensorRunner(name, be, padding_safe=padding_safe),
        str(path),
        {},
        batcher_config or BatcherConfig(),
    )


def load_torch_export(
    path: str | Path,
    *,
    name: str | None = None,
    task: str = "custom",
    output_names: list[str] | None = None,
    device: str | None = None,
    dtype: str | None = None,
    batcher_config: BatcherConfig | None = None,
    padding_safe: bool = False,
) -> ModelEntry:
    """Load a `torch.export` program (`.pt2`, written by `torch.export.save`). The signature is read
    from the program: user input names, dtypes and shapes (symbolic dimensions become -1).
    Raises ModelLoadError for an unreadable file."""
    path = Path(path)
    if not path.is_file():
        raise ModelLoadError(f"torch.export file not found: {path}")
    try:
        ep = torch.export.load(str(path))
    except Exception as exc:
        raise ModelLoadError(f"{path}: not a torch.export program: {str(exc).splitlines()[0]}") from exc
    signature = exported_signature(ep, output_names)
    be = TorchBackend(ep, signature, device=device, dtype=dtype)
    name = name or path.stem
    return ModelEntry(
        name,
        hash_files([path], path.parent),
        "torch_export",
        task,
        signature,
        be.device,
        be.dtype,
        be,
        TensorRunner(name, be, padding_safe=padding_safe),
        str(path),
        {},
        batcher_config or BatcherConfig(),
    )


def exported_signature(ep: torch.export.ExportedProgram, output_names: list[str] | None = None) -> Signature:
    """Signature of an ExportedProgram from its placeholder/output metadata (symbolic sizes -> -1)."""
    user_inputs = list(ep.graph_signature.user_inputs)
    nodes = {n.name: n for n in ep.graph.nodes if n.op == "placeholder"}
    inputs = tuple(_spec_from_val(n, nodes[n].meta["val"]) for n in user_inputs if n in nodes)
    out_node = next(n for n in ep.graph.nodes if n.op == "output")
    vals = [a.meta["val"] for a in out_node.args[0] if hasattr(a, "meta")]
    n_user = len(ep.graph_signature.user_outputs)
    vals = vals[-n_user:] if n_user else vals
    names = output_names or [f"output_{i}" for i in range(len(vals))]
    if len(names) != len(vals):
        raise ModelLoadError(f"{len(names)} output names given for {len(vals)} outputs")
    return Signature(inputs, tuple(_spec_from_val(n, v) for n, v in zip(names, vals)))


def _spec_from_val(name: str, val: Any) -> TensorSpec:
    shape = tuple(int(d) if isinstance(d, int) else -1 for d in val.shape)
    return TensorSpec(name, torch_dtype_name(val.dtype), shape)


def signature_from_dict(doc: Mapping[str, Any]) -> Signature:
    """Inverse of `Signature.to_dict()`."""

    def specs(items):
        return tuple(TensorSpec(d["name"], d["datatype"], tuple(d["shape"])) for d in items)

    return Signature(specs(doc["inputs"]), specs(doc["outputs"]))


# ---- nn.Module from a script ----------------------------------------------------------------------
def load_module(
    module: torch.nn.Module,
    name: str,
    *,
    task: str = "custom",
    signature: Signature | None = None,
    example_inputs: Mapping[str, np.ndarray] | None = None,
    dynamic_axes: Mapping[str, list[int]] | None = None,
    output_names: list[str] | None = None,
    device: str | None = None,
    dtype: str | None = None,
    compile: bool = False,
    batcher_config: BatcherConfig | None = None,
    padding_safe: bool = False,
) -> ModelEntry:
    """Wrap an `nn.Module` from a script. Give `signature`, or `example_inputs` (one batch, batch axis
    first) from which it is inferred: axis 0 of every tensor is the batch axis (-1), plus the
    `dynamic_axes` named per input. Version: SHA-256 of the state dict."""
    if signature is None:
        if example_inputs is None:
            raise ValueError(f"model {name!r}: give signature= or example_inputs= to register an nn.Module")
        signature = infer_signature(module, example_inputs, dynamic_axes or {}, output_names)
    be = TorchBackend(module, signature, device=device, dtype=dtype, compile=compile)
    return ModelEntry(
        name,
        hash_module(module),
        "nn_module",
        task,
        signature,
        be.device,
        be.dtype,
        be,
        TensorRunner(name, be, padding_safe=padding_safe),
        None,
        {},
        batcher_config or BatcherConfig(),
    )


def infer_signature(
    module: torch.nn.Module,
    example_inputs: Mapping[str, np.ndarray],
    dynamic_axes: Mapping[str, list[int]],
    output_names: list[str] | None = None,
) -> Signature:
    """Run `module` once on `example_inputs` (CPU, float32) and read the output dtypes and shapes."""
    inputs = []
    for k, v in example_inputs.items():
        arr = np.asarray(v)
        shape = [-1 if (i == 0 or i in dynamic_axes.get(k, [])) else d for i, d in enumerate(arr.shape)]
        inputs.append(TensorSpec(k, str(arr.dtype), tuple(shape)))
    with torch.inference_mode():
        out = module.eval()(*(torch.from_numpy(np.ascontiguousarray(np.asarray(v))) for v in example_inputs.values()))
    outs = [out] if isinstance(out, torch.Tensor) else list(out.values()) if isinstance(out, Mapping) else list(out)
    names = output_names or (
        list(out.keys()) if isinstance(out, Mapping) else [f"output_{i}" for i in range(len(outs))]
    )
    specs = tuple(TensorSpec(n, torch_dtype_name(t.dtype), (-1, *t.shape[1:])) for n, t in zip(names, outs))
    return Signature(tuple(inputs), specs)
