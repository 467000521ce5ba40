"""Tokenisation with the `tokenizers` library from a Hugging Face `tokenizer.json`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from tokenizers import Tokenizer

from ..errors import InputValidationError, ModelLoadError


@dataclass(slots=True, frozen=True)
class TokenizedText:
    """One tokenised text: `input_ids` and `token_type_ids` as int64 arrays of shape [length]."""

    input_ids: np.ndarray
    token_type_ids: np.ndarray

    @property
    def length(self) -> int:
        return int(self.input_ids.shape[0])


class TextTokenizer:
    """Wraps `tokenizers.Tokenizer` with truncation to `max_length` tokens and no padding
    (the batcher pads per batch). `pad_id` is the id used for padding positions."""

    def __init__(self, path: str | Path, max_length: int, model: str = "?") -> None:
        path = Path(path)
        if not path.is_file():
            raise ModelLoadError(f"tokenizer file not found: {path}")
        self.model = model
        self.tokenizer = Tokenizer.from_file(str(path))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(max_length=max_length)
        self.max_length = max_length
        pad = self.tokenizer.padding
        self.pad_id = pad["pad_id"] if pad else (self.tokenizer.token_to_id("[PAD]") or 0)

    def encode(self, text: str) -> TokenizedText:
        """Tokenise one text (special tokens added). Raises InputValidationError if not a non-empty str."""
        if not isinstance(text, str):
            raise InputValidationError(
                self.model, "text", f"expected a string, got {type(text).__name__}", "string", type(text).__name__
            )
        enc = self.tokenizer.encode(text)
        return TokenizedText(np.asarray(enc.ids, dtype=np.int64), np.asarray(enc.type_ids, dtype=np.int64))

    def encode_batch(self, texts: list[str]) -> list[TokenizedText]:
        for t in texts:
            if not isinstance(t, str):
                raise InputValidationError(
                    self.model, "text", f"expected a string, got {type(t).__name__}", "string", type(t).__name__
                )
        return [
            TokenizedText(np.asarray(e.ids, dtype=np.int64), np.asarray(e.type_ids, dtype=np.int64))
            for e in self.tokenizer.encode_batch(texts)
        ]


def pad_batch(items: list[TokenizedText], pad_to: int | None, pad_id: int) -> dict[str, np.ndarray]:
    """Stack tokenised texts into int64 arrays [batch, L], L = max(pad_to, longest); mask 1 on real tokens."""
    length = max([it.length for it in items] + [pad_to or 0])
    ids = np.full((len(items), length), pad_id, dtype=np.int64)
    mask = np.zeros((len(items), length), dtype=np.int64)
    types = np.zeros((len(items), length), dtype=np.int64)
    for i, it in enumerate(items):
        ids[i, : it.length] = it.input_ids
        mask[i, : it.length] = 1
        types[i, : it.length] = it.token_type_ids
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
