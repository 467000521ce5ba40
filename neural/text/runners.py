"""Runners for text models: tokenise in the caller's thread, pad per batch, run, split per request."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..backends.base import Backend
from ..signature import Signature, TensorSpec
from .microbatch import plan_micro_batches
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


class _TextRunner:
    """Shared by text runners: tokenise in `prepare`, run padded batches, optionally as micro-batches.

    `micro_batch_overhead_tokens`: None runs each batch as one call padded to `pad_to`; a number
    splits it into length-homogeneous micro-batches (see `plan_micro_batches`), each padded to its
    own longest text. Meant for CPUs, where padding costs as much as real tokens.
    """

    sequence_axis = True
    padding_safe = True  # the attention mask hides padded positions

    def __init__(
        self, tokenizer: TextTokenizer, backend: Backend, micro_batch_overhead_tokens: float | None = None
    ) -> None:
        self.tokenizer = tokenizer
        self.backend = backend
        self.micro_batch_overhead_tokens = micro_batch_overhead_tokens

    def prepare(self, text: str) -> TokenizedText:
        return self.tokenizer.encode(text)

    def item_length(self, prepared: TokenizedText) -> int:
        return prepared.length

    def _run(self, items: list[TokenizedText], pad_to: int | None, output: str) -> list[np.ndarray]:
        if self.micro_batch_overhead_tokens is None:
            return list(self.backend.run(pad_batch(items, pad_to, self.tokenizer.pad_id))[output])
        rows: list[Any] = [None] * len(items)
        for group in plan_micro_batches([it.length for it in items], self.micro_batch_overhead_tokens):
            out = self.backend.run(pad_batch([items[i] for i in group], None, self.tokenizer.pad_id))[output]
            for i, row in zip(group, out):
                rows[i] = row
        return rows


class TextEmbeddingRunner(_TextRunner):
    """A request is a string; its output is a float32 vector [dim] (unit length when normalised)."""

    def run_batch(self, items: list[TokenizedText], pad_to: int | None) -> list[np.ndarray]:
        return [np.array(row, dtype=np.float32) for row in self._run(items, pad_to, "sentence_embedding")]

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


class TextClassificationRunner(_TextRunner):
    """A request is a string; its output is `{"label": str, "score": float, "probabilities": float32 [num_labels]}`."""

    def __init__(
        self,
        tokenizer: TextTokenizer,
        backend: Backend,
        id2label: dict[int, str],
        micro_batch_overhead_tokens: float | None = None,
    ) -> None:
        super().__init__(tokenizer, backend, micro_batch_overhead_tokens)
        self.id2label = id2label

    def run_batch(self, items: list[TokenizedText], pad_to: int | None) -> list[dict[str, Any]]:
        logits = np.stack(self._run(items, pad_to, "logits")).astype(np.float64)
        probs = np.exp(logits - logits.max(axis=1, keepdims=True))
        probs /= probs.sum(axis=1, keepdims=True)
        out = []
        for row in probs:
            k = int(row.argmax())
            out.append(
                {"label": self.id2label.get(k, str(k)), "score": float(row[k]), "probabilities": row.astype(np.float32)}
            )
        return out
