"""`TextTokenizer` tokenises only a prefix of a long text (cut at whitespace, doubled until it
overflows `max_length`): the tokens must be those of the whole text, whatever the words and the
whitespace between them."""

from __future__ import annotations

import random

import pytest

from neural.minilm import minilm_dir
from neural.text.tokenizer import PREFIX_CHARS_PER_TOKEN, TextTokenizer

WORDS = ["word", "élan", "日本語", "x" * 30, "a,b.c", "don't", "été", "12345", "ﬁ", "Ⅻ", "😀", "zzqqxxkkww", "a" * 120]
SEPARATORS = [" ", "  ", "\t", "\n", "\u3000", "\x1c", "\u00a0", "\u2028", "\x85", " " * 40]


@pytest.fixture(scope="module")
def tokenizer() -> TextTokenizer:
    return TextTokenizer(minilm_dir() / "tokenizer.json", 512)


@pytest.mark.parametrize("seed", range(6))
def test_prefix_tokens_equal_the_whole_texts(tokenizer: TextTokenizer, seed: int) -> None:
    rng = random.Random(seed)
    for words in (200, 900, 3000, 20000):
        seps = SEPARATORS if seed % 2 else SEPARATORS[-1:]  # odd seeds: mixed; even: 40 spaces (the prefix doubles)
        text = "".join(rng.choice(WORDS) + rng.choice(seps) for _ in range(words))
        got = tokenizer.encode(text)
        whole = tokenizer.tokenizer.encode(text)
        assert got.input_ids.tolist() == whole.ids and got.token_type_ids.tolist() == whole.type_ids


def test_texts_around_the_first_prefix_length(tokenizer: TextTokenizer) -> None:
    first = PREFIX_CHARS_PER_TOKEN * tokenizer.max_length
    for n in (first - 1, first, first + 1, 2 * first + 3):
        for text in ("w " * n, "w" * n, ("wörd " * n)[:n]):
            assert tokenizer.encode(text).input_ids.tolist() == tokenizer.tokenizer.encode(text).ids
