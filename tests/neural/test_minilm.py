"""all-MiniLM-L6-v2 through our runtime equals sentence-transformers on the same weights."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from neural import MINILM_DIM, MINILM_NAME, MINILM_ONNX_NAME, InputValidationError

SENTENCES = [
    "First Citizen: Before we proceed any further, hear me speak.",
    "You are all resolved rather to die than to famish?",
    "Rules gate the model; the model scores the text.",
    "x",
    "",
    "Ünïcödé, emoji 🙂 and CJK 漢字 survive tokenisation.",
    "a rather long sentence that repeats itself " * 60,  # beyond 256 tokens: truncated as sentence-transformers does
]


@pytest.fixture(scope="module")
def reference(sentence_transformer):
    return sentence_transformer.encode(SENTENCES, convert_to_numpy=True, batch_size=4)


async def test_torch_embeddings_equal_sentence_transformers(minilm_registry, reference):
    entry = minilm_registry.get(MINILM_NAME)
    got = np.stack(await entry.infer_many(SENTENCES))
    assert got.shape == (len(SENTENCES), MINILM_DIM) and got.dtype == np.float32
    np.testing.assert_allclose(got, reference, atol=1e-5, rtol=0)
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)


async def test_onnxruntime_export_equals_sentence_transformers(minilm_registry, reference):
    entry = minilm_registry.get(MINILM_ONNX_NAME)
    assert entry.format == "onnx" and entry.info()["backend"]["providers"][-1] == "CPUExecutionProvider"
    got = np.stack(await entry.infer_many(SENTENCES))
    np.testing.assert_allclose(got, reference, atol=1e-4, rtol=0)


async def test_one_at_a_time_equals_batched(minilm_registry, reference):
    entry = minilm_registry.get(MINILM_NAME)
    singles = [await entry.infer(s) for s in SENTENCES[:3]]
    np.testing.assert_allclose(np.stack(singles), reference[:3], atol=1e-5, rtol=0)


async def test_concurrent_requests_batch_together_and_keep_their_own_results(minilm_registry, reference):
    entry = minilm_registry.get(MINILM_NAME)
    entry.batcher.reset_stats()
    order = list(range(len(SENTENCES))) * 3
    outs = await asyncio.gather(*(entry.infer(SENTENCES[i]) for i in order))
    for i, vec in zip(order, outs):
        np.testing.assert_allclose(vec, reference[i], atol=1e-5, rtol=0)
    assert entry.batcher.stats.max_batch_size > 1


def test_registry_entry_describes_the_model(minilm_registry):
    entry = minilm_registry.get(MINILM_NAME)
    info = entry.info()
    assert info["task"] == "embedding" and info["format"] == "hf" and len(info["version"]) == 64
    assert info["signature"]["outputs"] == [
        {"name": "sentence_embedding", "datatype": "float32", "shape": [-1, MINILM_DIM]}
    ]
    assert [i["name"] for i in info["signature"]["inputs"]] == ["input_ids", "attention_mask", "token_type_ids"]
    assert info["metadata"]["pooling"] == "mean" and info["metadata"]["normalize"] is True
    assert info["metadata"]["max_length"] == 256
    onnx_info = minilm_registry.get(MINILM_ONNX_NAME).info()
    assert onnx_info["metadata"]["exported_from"]["version"] == entry.version


async def test_non_text_request_is_rejected_before_queueing(minilm_registry):
    entry = minilm_registry.get(MINILM_NAME)
    with pytest.raises(InputValidationError, match="input 'text': expected a string, got int"):
        await entry.infer(42)
    with pytest.raises(InputValidationError) as info:
        entry.submit_many(["fine", None])
    assert "in item 1 of the request list" in "".join(getattr(info.value, "__notes__", []))
    assert entry.batcher.queue_size == 0
