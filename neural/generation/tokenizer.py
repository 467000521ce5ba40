"""The tokenizer of a Hugging Face model folder, whatever files it ships.

`tokenizer.json` (a `tokenizers` fast tokenizer) is read directly. A folder with only
`vocab.json` + `merges.txt` (GPT-2 style byte-level BPE) or a SentencePiece `tokenizer.model`
(Llama, Mistral) is converted to the same fast form by transformers' `AutoTokenizer` (read
locally, never from a hub), so the engine's detokenizer sees one interface either way.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

TOKENIZER_FILES = ("tokenizer.json", "vocab.json", "tokenizer.model")


def has_tokenizer(model_dir: str | Path) -> bool:
    """True when the folder has tokenizer files this module can read."""
    root = Path(model_dir)
    return any((root / f).is_file() for f in TOKENIZER_FILES)


def load_tokenizer(model_dir: str | Path) -> Any | None:
    """A `tokenizers.Tokenizer` for the folder, or None when it has no tokenizer files.

    Raises ValueError naming the folder when the files are there but cannot be read (e.g. a
    SentencePiece model transformers cannot convert).
    """
    root = Path(model_dir)
    if (root / "tokenizer.json").is_file():
        from tokenizers import Tokenizer

        return Tokenizer.from_file(str(root / "tokenizer.json"))
    if not has_tokenizer(root):
        return None
    hf = hf_tokenizer(str(root))
    backend = getattr(hf, "backend_tokenizer", None)
    if backend is None:
        raise ValueError(f"{root}: transformers loaded a slow tokenizer that has no fast (tokenizers) form")
    return backend


_WATCHED = (*TOKENIZER_FILES, "merges.txt", "tokenizer_config.json", "special_tokens_map.json", "chat_template.jinja")


def hf_tokenizer(model_dir: str | Path) -> Any:
    """transformers' `AutoTokenizer` for a local folder (never downloads). Cached per folder and
    the modification times of its tokenizer files, so an edited chat template is read again.

    Raises ValueError naming the folder when transformers cannot load it.
    """
    root = Path(model_dir)
    stamp = tuple((root / f).stat().st_mtime_ns if (root / f).is_file() else 0 for f in _WATCHED)
    return _hf_tokenizer(str(root), stamp)


@functools.lru_cache(maxsize=16)
def _hf_tokenizer(model_dir: str, stamp: tuple[int, ...]) -> Any:
    from transformers import AutoTokenizer

    try:
        return AutoTokenizer.from_pretrained(model_dir, local_files_only=True, use_fast=True)
    except Exception as exc:  # transformers raises OSError/ValueError/ImportError/KeyError by case
        raise ValueError(f"{model_dir}: transformers cannot load the tokenizer: {type(exc).__name__}: {exc}") from exc
