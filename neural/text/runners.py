"""Runners for text models: tokenise in the caller's thread, pad per batch, run, split per request."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..backends.base import Backend
from ..signature import Signature, TensorSpec
from .tokenizer import TextTokenizer, TokenizedText, pad_batch

TEXT_INPUTS = (
    TensorSpec("input_ids", "int64", (-1, -1), ("batch", "sequence")),
    TensorSpec("attention_mask", "int64", (-1, -1), ("batch", "sequence")),
    TensorSpec("token_type_ids", "int64", (-1, -1), ("batch", "sequence")),
)


def embedding_signature(dim: int) -> Signature:
    """Inputs input_ids/attention_mask/token_type_ids int64 [-1, -1]; output sentence_embedding float32 [-1, dim]."""
    return Signature(TEXT_INPUTS, (TensorSpec("sentence_embedding", "float32", (-1, dim), ("batch", None)),))


def classification_signature(num_labels: int) -> Signature:
    return Signature(TEXT_INPUTS, (TensorSpec("logits", "float32", (-1, num_labels), ("batch", None)),))


class TextEmbeddingRunner:
    """A request is a string; its output is a float32 vector [dim] (unit length when normalised)."""

    sequence_axis = True
    padding_safe = True  # the attention mask hides padded positions

    def __init__(self, tokenizer: TextTokenizer, backend: Backend) -> None:
        self.tokenizer = tokenizer
        self.backend = backend

    def prepare(self, text: str) -> TokenizedText:
        return self.tokenizer.encode(text)

    def item_length(self, prepared: TokenizedText) -> int:
        return prepared.length

    def run_batch(self, items: list[TokenizedText], pad_to: int | None) -> list[np.ndarray]:
        out = self.backend.run(pad_batch(items, pad_to, self.tokenizer.pad_id))["sentence_embedding"]
        return [np.array(row, dtype=np.float32) for row in out]

    def encode(self, texts: list[str], batch_size: int = 32) -> np.ndarray:
        """Embed texts directly (no batcher), sorted by length into batches: float32 [N, dim]."""
        toks = self.tokenizer.encode_batch(list(texts))
        order = sorted(range(len(toks)), key=lambda i: toks[i].length)
        result: list[Any] = [None] * len(toks)
        for start in range(0, len(order), batch_size):
            idx = order[start : start + batch_size]
            for i, vec in zip(idx, self.run_batch([toks[i] for i in idx], None)):
                result[i] = vec
        return np.stack(result) if result else np.zeros((0, 0), dtype=np.float32)


class TextClassificationRunner:
    """A request is a string; its output is `{"label": str, "score": float, "probabilities": float32 [num_labels]}`."""

    sequence_axis = True
    padding_safe = True  # the attention mask hides padded positions

    def __init__(self, tokenizer: TextTokenizer, backend: Backend, id2label: dict[int, str]) -> None:
        self.tokenizer = tokenizer
        self.backend = backend
        self.id2label = id2label

    def prepare(self, text: str) -> TokenizedText:
        return self.tokenizer.encode(text)

    def item_length(self, prepared: TokenizedText) -> int:
        return prepared.length

    def run_batch(self, items: list[TokenizedText], pad_to: int | None) -> list[dict[str, Any]]:
        logits = self.backend.run(pad_batch(items, pad_to, self.tokenizer.pad_id))["logits"].astype(np.float64)
        probs = np.exp(logits - logits.max(axis=1, keepdims=True))
        probs /= probs.sum(axis=1, keepdims=True)
        out = []
        for row in probs:
            k = int(row.argmax())
            out.append({"label": self.id2label.get(k, str(k)), "score": float(row[k]), "probabilities": row.astype(np.float32)})
        return out
