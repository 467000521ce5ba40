"""Registry: every format loads with the right signature and version, and serves the same numbers as torch."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
import torch

from neural import (
    BatcherConfig,
    ModelLoadError,
    ModelNotFoundError,
    ModelRegistry,
    Signature,
    TensorSpec,
    export_onnx,
    minilm_dir,
    save_torchscript,
)


class BagOfTokens(torch.nn.Module):
    """tokens int64 [B, L], mask float32 [B, L] -> logits float32 [B, 3] (masked mean of embeddings)."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.emb = torch.nn.Embedding(50, 8)
        self.out = torch.nn.Linear(8, 3)

    def forward(self, tokens: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        h = self.emb(tokens) * mask.unsqueeze(-1)
        return self.out(h.sum(1) / mask.sum(1, keepdim=True).clamp(min=1.0))


SIG = Signature(
    (
        TensorSpec("tokens", "int64", (-1, -1), ("batch", "sequence")),
        TensorSpec("mask", "float32", (-1, -1), ("batch", "sequence")),
    ),
    (TensorSpec("logits", "float32", (-1, 3), ("batch", None)),),
)


def requests(n: int = 6) -> list[dict[str, np.ndarray]]:
    rng = np.random.default_rng(1)
    out = []
    for i in range(n):
        length = 2 + (i * 5) % 11
        out.append(
            {"tokens": rng.integers(1, 50, size=length).astype(np.int64), "mask": np.ones(length, dtype=np.float32)}
        )
    return out


def reference(module: torch.nn.Module, reqs) -> np.ndarray:
    with torch.inference_mode():
        return np.stack(
            [module(torch.from_numpy(r["tokens"])[None], torch.from_numpy(r["mask"])[None])[0].numpy() for r in reqs]
        )


@pytest.fixture
def registry():
    reg = ModelRegistry()
    yield reg
    reg.close()


CFG = BatcherConfig(max_batch_size=8, max_queue_delay_ms=2, buckets=(4, 8, 16))


async def serve_and_compare(entry, module, atol: float) -> None:
    reqs = requests()
    outs = await entry.infer_many(reqs)
    got = np.stack([o["logits"] for o in outs])
    np.testing.assert_allclose(got, reference(module, reqs), atol=atol, rtol=0)
    assert entry.batcher.stats.max_batch_size > 1  # padded into shared batches, results unchanged


async def test_nn_module_with_inferred_signature(registry):
    module = BagOfTokens()
    ex = {"tokens": np.ones((2, 5), dtype=np.int64), "mask": np.ones((2, 5), dtype=np.float32)}
    entry = registry.register_module(
        module,
        "bag",
        example_inputs=ex,
        dynamic_axes={"tokens": [1], "mask": [1]},
        output_names=["logits"],
        task="classification",
        batcher_config=CFG,
        padding_safe=True,
    )
    assert entry.format == "nn_module" and entry.signature.to_dict() == SIG.to_dict()
    await serve_and_compare(entry, module, 1e-6)


async def test_torchscript_file_carries_its_signature(registry, tmp_path):
    module = BagOfTokens()
    path = tmp_path / "bag.pt"
    save_torchscript(torch.jit.script(module), path, SIG)
    entry = registry.register_path(path, batcher_config=CFG, padding_safe=True)
    assert (entry.name, entry.format) == ("bag", "torchscript")
    assert entry.signature.to_dict() == SIG.to_dict()
    await serve_and_compare(entry, module, 1e-6)


def test_foreign_torchscript_needs_a_signature(registry, tmp_path):
    path = tmp_path / "plain.pt"
    torch.jit.save(torch.jit.script(BagOfTokens()), str(path))
    with pytest.raises(ModelLoadError, match="carries no signature; pass signature="):
        registry.register_path(path)
    entry = registry.register_torchscript(path, signature=SIG)
    assert entry.signature is SIG


async def test_torch_export_program(registry, tmp_path):
    module = BagOfTokens()
    seq = torch.export.Dim("seq", min=2, max=512)
    batch = torch.export.Dim("batch", min=1, max=64)
    ep = torch.export.export(
        module,
        (torch.ones(2, 5, dtype=torch.int64), torch.ones(2, 5)),
        dynamic_shapes={"tokens": {0: batch, 1: seq}, "mask": {0: batch, 1: seq}},
    )
    path = tmp_path / "bag.pt2"
    torch.export.save(ep, str(path))
    entry = registry.register_path(path, output_names=["logits"], batcher_config=CFG, padding_safe=True)
    assert entry.format == "torch_export"
    assert [(s.name, s.dtype, s.shape) for s in entry.signature.inputs] == [
        ("tokens", "int64", (-1, -1)),
        ("mask", "float32", (-1, -1)),
    ]
    assert [(s.name, s.shape) for s in entry.signature.outputs] == [("logits", (-1, 3))]
    await serve_and_compare(entry, module, 1e-6)


async def test_onnx_file_from_verified_export(registry, tmp_path):
    module = BagOfTokens()
    examples = [
        {"tokens": np.ones((b, n), dtype=np.int64) * 3, "mask": np.ones((b, n), dtype=np.float32)}
        for b, n in ((2, 5), (3, 9))
    ]
    report = export_onnx(module, SIG, examples, tmp_path / "bag.onnx")
    assert report.path.is_file() and report.max_abs_diff["logits"] <= 1e-4
    entry = registry.register_path(report.path, batcher_config=CFG, padding_safe=True)
    assert entry.format == "onnx" and entry.signature.to_dict() == SIG.to_dict()
    assert entry.signature.inputs[0].dims == ("batch", "sequence")
    await serve_and_compare(entry, module, 1e-5)


async def test_models_that_do_not_mask_padding_batch_only_equal_lengths(registry):
    module = BagOfTokens()
    entry = registry.register_module(module, "bag-unmasked", signature=SIG, batcher_config=CFG)  # padding_safe=False
    reqs = requests(4) + requests(4)
    outs = await entry.infer_many(reqs)
    np.testing.assert_allclose(np.stack([o["logits"] for o in outs]), reference(module, reqs), atol=1e-6, rtol=0)
    for rec in entry.batcher.batch_log:
        assert rec.pad_to in {len(r["tokens"]) for r in reqs}
    assert entry.batcher.stats.max_batch_size == 2 and entry.batcher.stats.batches == 4


def test_hf_classification_directory(registry, tmp_path):
    from safetensors.torch import save_model
    from transformers import BertConfig, BertForSequenceClassification

    torch.manual_seed(0)
    cfg = BertConfig(
        vocab_size=30522,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        num_labels=3,
        id2label={0: "neg", 1: "neu", 2: "pos"},
        label2id={"neg": 0, "neu": 1, "pos": 2},
        architectures=["BertForSequenceClassification"],
    )
    model = BertForSequenceClassification(cfg).eval()
    cfg.save_pretrained(tmp_path)
    save_model(model, str(tmp_path / "model.safetensors"))
    shutil.copy(minilm_dir() / "tokenizer.json", tmp_path / "tokenizer.json")
    entry = registry.register_path(tmp_path, name="tiny-sentiment")
    assert (entry.task, entry.format) == ("classification", "hf")
    texts = ["a fine day", "the worst of times, the best of times"]
    outs = [entry.infer_sync(t, timeout_s=60) for t in texts]
    from transformers import PreTrainedTokenizerFast

    tok = PreTrainedTokenizerFast(tokenizer_file=str(tmp_path / "tokenizer.json"))
    for text, out in zip(texts, outs):
        enc = tok(text, return_tensors="pt")
        with torch.inference_mode():
            probs = model(**enc).logits.softmax(-1)[0].numpy()
        np.testing.assert_allclose(out["probabilities"], probs, atol=1e-5)
        assert out["label"] == cfg.id2label[int(probs.argmax())]


def test_hf_directory_errors(registry, tmp_path):
    with pytest.raises(ModelLoadError, match="config.json is missing"):
        registry.register_hf_dir(tmp_path)
    (tmp_path / "config.json").write_text(json.dumps({"architectures": ["LlamaForCausalLM"]}))
    (tmp_path / "tokenizer.json").write_text("{}")
    with pytest.raises(ModelLoadError, match="no \\*.safetensors"):
        registry.register_hf_dir(tmp_path)
    (tmp_path / "model.safetensors").write_bytes(b"")
    with pytest.raises(ModelLoadError, match="causal LM; register it through the generation engine"):
        registry.register_hf_dir(tmp_path)
    with pytest.raises(ModelLoadError, match="unknown model format"):
        (tmp_path / "weights.bin").write_bytes(b"x")
        registry.register_path(tmp_path / "weights.bin")


def test_versions_are_content_hashes(registry, tmp_path):
    a, b = BagOfTokens(), BagOfTokens()
    ex = {"tokens": np.ones((1, 3), dtype=np.int64), "mask": np.ones((1, 3), dtype=np.float32)}
    ea = registry.register_module(a, "bag", signature=SIG)
    assert registry.register_module(b, "bag", signature=SIG) is ea  # same weights: same version, same entry kept
    with torch.no_grad():
        b.out.bias += 1
    eb = registry.register_module(b, "bag", signature=SIG)
    assert eb.version != ea.version and registry.get("bag") is eb and registry.get("bag", ea.version[:8]) is ea
    assert [e.version for e in registry.list()] == [ea.version, eb.version]
    with pytest.raises(ModelNotFoundError, match="no model named 'nope' is registered; known models: bag"):
        registry.get("nope")
    registry.unregister("bag")
    assert "bag" not in registry and ex


def test_generic_entry_for_other_subsystems(registry):
    """The generation engine registers its own backend object; the registry stays generic."""
    from neural import ModelEntry, NeuralError

    engine = object()
    entry = registry.register(ModelEntry("tiny-llama", "ab" * 32, "hf", "causal-lm", None, "cpu", "float32", engine))
    assert registry.get("tiny-llama").backend is engine and entry.info()["batcher"] is None
    with pytest.raises(NeuralError, match="not served by a dynamic batcher"):
        entry.submit("hello")
    with pytest.raises(ValueError, match="already registered"):
        registry.register(ModelEntry("tiny-llama", "ab" * 32, "hf", "causal-lm", None, "cpu", "float32", engine))
    with pytest.raises(ValueError, match="unknown task"):
        ModelEntry("m", "v", "hf", "telepathy", None, "cpu", "float32", engine)
