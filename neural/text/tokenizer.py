"""Tokenisation with the `tokenizers` library from a Hugging Face `tokenizer.json`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from tokenizers import Tokenizer

from ..errors import InputValidationError, ModelLoadError

# The first prefix of a long text that is tokenised: English is ~4-5 characters per BERT token, so 8
# per token overflows `max_length` at once for most texts (the prefix doubles otherwise). `encode`
# holds the GIL throughout: 4 KiB took 3-4 ms where the 16 KiB of 32 per token took 14-18 ms (512 tokens).
PREFIX_CHARS_PER_TOKEN = 8


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
        enc = self._encode_truncated(text)
        return TokenizedText(np.asarray(enc.ids, dtype=np.int64), np.asarray(enc.type_ids, dtype=np.int64))

    def _encode_truncated(self, text: str):
        """`tokenizer.encode(text)` (truncated to `max_length`) without tokenising the whole of a long text.

        Tokens of a prefix cut at whitespace are a prefix of the text's tokens when the
        pre-tokenizer splits at whitespace and the normaliser works character by character (BERT's,
        as in MiniLM). So a prefix of `PREFIX_CHARS_PER_TOKEN` characters per kept token is tokenised
        first; if it already overflows `max_length`, the truncated result is the text's; otherwise the
        prefix doubles. An 8 MiB text costs a few milliseconds instead of tens of seconds (holding the GIL).
        """
        limit = PREFIX_CHARS_PER_TOKEN * self.max_length
        if len(text) <= limit or not self._prefix_safe:
            return self.tokenizer.encode(text)
        while limit < len(text):
            cut = _whitespace_before(text, limit)
            if cut > 0:
                enc = self.tokenizer.encode(text[:cut])
                if enc.overflowing:
                    return enc
            limit *= 2
        return self.tokenizer.encode(text)

    @property
    def _prefix_safe(self) -> bool:
        pre = type(self.tokenizer.pre_tokenizer).__name__ if self.tokenizer.pre_tokenizer is not None else ""
        norm = type(self.tokenizer.normalizer).__name__ if self.tokenizer.normalizer is not None else "None"
        return pre in ("BertPreTokenizer", "Whitespace", "WhitespaceSplit") and norm in ("BertNormalizer", "None")

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


def _whitespace_before(text: str, end: int, window: int = 4096) -> int:
    """Index of the last whitespace character before `end` (searching `window` characters back), or 0."""
    for i in range(end - 1, max(0, end - window) - 1, -1):
        if text[i].isspace():
            return i
    return 0


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
