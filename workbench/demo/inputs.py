"""The demo's held-out inputs as JSONL files, for running the pipelines by other routes
(`workbench run PIPELINE --input-file FILE`, the API, the TUI, scripts)."""

from __future__ import annotations

import json
from pathlib import Path

from .digits_data import damaged_sequences, heldout_sequences
from .intents_demo import intents_inputs
from .prompts import PROMPTS


def write_demo_inputs(folder: str | Path) -> dict[str, int]:
    """Write `demo_digits.jsonl` (one `{"id", "images"}` per line: 55 held-out ID numbers + 3 damaged),
    `demo_digits.labels.jsonl` (`{"id", "number", "damaged"}`), `demo_intents.jsonl` (`{"id", "text"}`),
    `demo_intents.labels.jsonl` (`{"id", "intent", "action"}`), `demo_generate.jsonl` (`{"prompt"}`) and
    `demo_generate.labels.jsonl` (`{"prompt", "expect"}`): the input files hold only the fields the
    pipelines' input schemas accept (`additionalProperties: false`). Returns `{path: lines}`. Raises
    OSError when the folder cannot be written or made (its parent must exist: missing parents are not made)."""
    out = Path(folder)
    out.mkdir(exist_ok=True)
    seqs = heldout_sequences()
    seqs += damaged_sequences(seqs)
    rows = intents_inputs()
    files = {
        "demo_digits.jsonl": [s.to_input() for s in seqs],
        "demo_digits.labels.jsonl": [{"id": s.id, "number": s.number, "damaged": s.damaged} for s in seqs],
        "demo_intents.jsonl": [{"id": f"heldout-{i:03d}", "text": r["text"]} for i, r in enumerate(rows)],
        "demo_intents.labels.jsonl": [
            {"id": f"heldout-{i:03d}", "intent": r["intent"], "action": r["action"]} for i, r in enumerate(rows)
        ],
        "demo_generate.jsonl": [{"prompt": p["prompt"]} for p in PROMPTS],
        "demo_generate.labels.jsonl": PROMPTS,
    }
    written: dict[str, int] = {}
    for name, items in files.items():
        path = out / name
        path.write_text("".join(json.dumps(x) + "\n" for x in items))
        written[str(path)] = len(items)
    return written
