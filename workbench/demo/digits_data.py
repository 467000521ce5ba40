"""Held-out inputs of the digits demo: ID numbers written with real held-out digit images.

The images are scikit-learn's bundled handwritten digits (`load_digits`, nothing downloaded);
the held-out split is the one fixed by `scripts/train_digits.py` (`models/digits/split.json`).
An ID number is `length - 1` payload digits plus a Luhn check digit (ISO/IEC 7812-1 annex B).
Sequences are drawn without replacement from a seeded shuffle of the held-out images: the
payload is whatever digits come next, and the check digit is the next unused held-out image of
the required class, so every held-out image is used at most once.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
SPLIT_FILE = ROOT / "models" / "digits" / "split.json"


@dataclass(slots=True, frozen=True)
class DigitSequence:
    """One demo input and its truth.

    Attributes:
        id: a stable name, e.g. "heldout-07".
        images: L pictures, each 64 pixel values 0..16 (row-major 8x8), as Python floats.
        digits: the true digits (from the data set's labels), length L.
        damaged: position of a picture blanked on purpose (to show the input gate), or None.
        indices: the images' indices into `load_digits()`.
    """

    id: str
    images: tuple[tuple[float, ...], ...]
    digits: tuple[int, ...]
    indices: tuple[int, ...]
    damaged: int | None = None

    @property
    def number(self) -> str:
        return "".join(str(d) for d in self.digits)

    def to_input(self) -> dict:
        """The pipeline input: `{"id": str, "images": [[64 floats], ...]}`."""
        return {"id": self.id, "images": [list(im) for im in self.images]}


def luhn_term(digit: int, pos: int, length: int) -> int:
    """Contribution of `digit` at 0-based `pos` (from the left) of a `length`-digit number."""
    if (length - 1 - pos) % 2 == 1:
        x = 2 * digit
        return x - 9 if x > 9 else x
    return digit


def luhn_valid(digits: list[int] | tuple[int, ...]) -> bool:
    """True when the Luhn sum of `digits` (check digit last) is divisible by 10."""
    n = len(digits)
    return sum(luhn_term(d, i, n) for i, d in enumerate(digits)) % 10 == 0


def luhn_check_digit(payload: list[int]) -> int:
    """The check digit that makes `payload + [c]` Luhn-valid."""
    for c in range(10):
        if luhn_valid([*payload, c]):
            return c
    raise AssertionError("unreachable: a Luhn check digit always exists")


@lru_cache(maxsize=1)
def _digits() -> tuple[np.ndarray, np.ndarray]:
    from sklearn.datasets import load_digits

    d = load_digits()
    return d.data.astype(np.float32), d.target.astype(np.int64)


def heldout_indices() -> list[int]:
    """Indices of the held-out images (fixed by the training script). Raises FileNotFoundError."""
    if not SPLIT_FILE.is_file():
        raise FileNotFoundError(f"{SPLIT_FILE} is missing: run `uv run python scripts/train_digits.py`")
    return list(json.loads(SPLIT_FILE.read_text())["heldout"])


def heldout_sequences(length: int = 8, seed: int = 0, limit: int | None = None) -> list[DigitSequence]:
    """ID numbers of `length` digits built from held-out images (see the module docstring).

    With the committed split (450 held-out images) and length 8 this gives 55 sequences.
    Raises ValueError for length < 2.
    """
    if length < 2:
        raise ValueError(f"length must be >= 2 (payload + check digit), got {length}")
    x, y = _digits()
    pool = [int(i) for i in np.random.default_rng(seed).permutation(heldout_indices())]
    out: list[DigitSequence] = []
    while len(pool) >= length and (limit is None or len(out) < limit):
        payload, pool = pool[: length - 1], pool[length - 1 :]
        check = luhn_check_digit([int(y[i]) for i in payload])
        j = next((k for k, i in enumerate(pool) if y[i] == check), None)
        if j is None:
            break
        idx = [*payload, pool.pop(j)]
        out.append(
            DigitSequence(
                id=f"heldout-{len(out):02d}",
                images=tuple(tuple(float(v) for v in x[i]) for i in idx),
                digits=tuple(int(y[i]) for i in idx),
                indices=tuple(idx),
            )
        )
    return out


def damaged_sequences(sequences: list[DigitSequence], count: int = 3, seed: int = 1) -> list[DigitSequence]:
    """Copies of `count` sequences with one picture blanked (all pixels 0): a scan dropout.

    These exist to show the input gate: the expected outcome is `rejected` with no model call.
    """
    rng = np.random.default_rng(seed)
    out = []
    for k in rng.choice(len(sequences), size=min(count, len(sequences)), replace=False):
        s = sequences[int(k)]
        pos = int(rng.integers(len(s.images)))
        images = list(s.images)
        images[pos] = tuple(0.0 for _ in range(64))
        out.append(
            DigitSequence(
                id=f"{s.id}-blank{pos}", images=tuple(images), digits=s.digits, indices=s.indices, damaged=pos
            )
        )
    return out
