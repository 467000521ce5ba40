"""Prompts of the generation demo, with the outcome the input rail must give where it is known.

`expect` is "blocked" for prompts the input rail refuses (a card number, an e-mail address, an
over-long prompt) and None where the sampled text decides (completed or stopped by a rail).
"""

from __future__ import annotations

_LONG = (
    "Now is the winter of our discontent made glorious summer by this sun of York; and all the clouds "
    "that lour'd upon our house in the deep bosom of the ocean buried. "
) * 3

PROMPTS: list[dict] = [
    {"prompt": "ROMEO:\n", "expect": None},
    {"prompt": "JULIET:\nO Romeo, Romeo,", "expect": None},
    {"prompt": "KING RICHARD III:\nNow is the", "expect": None},
    {"prompt": "First Citizen:\nBefore we proceed any further,", "expect": None},
    {"prompt": "HAMLET:\nTo be, or not", "expect": None},
    {"prompt": "MENENIUS:\nWhat news, my friends?", "expect": None},
    {"prompt": "LADY MACBETH:\nOut, damned spot!", "expect": None},
    {"prompt": "GLOUCESTER:\nThou art a villain,", "expect": None},
    {"prompt": "DUKE VINCENTIO:\n", "expect": None},
    {"prompt": "KATHARINA:\nI pray you, sir,", "expect": None},
    {"prompt": "QUEEN MARGARET:\nThe blood of", "expect": None},
    {"prompt": "PETRUCHIO:\nGood morrow, Kate;", "expect": None},
    {"prompt": "Send the ducats to card 4539 1488 0343 6467 tonight.\nROMEO:\n", "expect": "blocked"},
    {"prompt": "Write to me at romeo@verona.example, sweet Juliet.\nJULIET:\n", "expect": "blocked"},
    {"prompt": _LONG + "\nKING RICHARD III:\n", "expect": "blocked"},
]
