"""Part 1 of `workbench demo`: the digits pipeline on held-out ID numbers."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from .digits_data import DigitSequence, damaged_sequences, heldout_sequences
from .summary import PipelineSummary, ratio

PIPELINE = "demo_digits"
MODEL_NODES = ("read",)


def digits_inputs(quick: bool = False) -> list[DigitSequence]:
    """Held-out ID numbers (55 with the committed split; 6 when quick) plus 3 damaged copies (1 when quick)."""
    seqs = heldout_sequences(limit=6 if quick else None)
    return seqs + damaged_sequences(seqs, count=1 if quick else 3)


async def run_digits(
    wb: Any, *, quick: bool = False, concurrency: int = 32, progress: Callable[[int, int], None] | None = None
) -> PipelineSummary:
    """Run `demo_digits` on every input through the Workbench (all runs recorded) and score it.

    Truth: each held-out image's label from the data set; damaged inputs must be rejected by the gate.
    Model alone = the network's reading (`read`); model + rules = the concluded `number` of
    accepted and corrected runs; `review` and `rejected` runs are decisions left to a person.
    """
    s = PipelineSummary(PIPELINE, "digits: Luhn checksum rules gate, correct and explain a digits network")
    items = digits_inputs(quick)
    s.inputs = len(items)
    t0 = time.perf_counter()
    done = 0

    def on_result(i: int, r: Any) -> None:
        nonlocal done
        done += 1
        if progress:
            progress(done, len(items))

    results = await wb.run_many(
        PIPELINE, [x.to_input() for x in items], explain=False, concurrency=concurrency, on_result=on_result
    )
    s.seconds = time.perf_counter() - t0
    run_ids: list[str] = []
    digits_total = digits_alone = digits_rules = 0
    seq_alone = seq_clean = 0
    auto = auto_right = 0
    damaged_rejected = damaged = 0
    for x, r in zip(items, results):
        out = s.tally(x.id, r, MODEL_NODES, run_ids)
        if out is None:
            continue
        action = str(out.get("action"))
        if x.damaged is not None:
            damaged += 1
            damaged_rejected += action == "rejected"
            _maybe_example(s, x, out, r)
            continue
        seq_clean += 1
        read, number = str(out.get("read") or ""), str(out.get("number") or "")
        seq_alone += read == x.number
        digits_total += len(x.digits)
        digits_alone += sum(a == b for a, b in zip(read, x.number))
        digits_rules += sum(a == b for a, b in zip(number, x.number))
        if action in ("accept", "corrected"):
            auto += 1
            auto_right += number == x.number
        _maybe_example(s, x, out, r)
    s.add_traces(wb.store, run_ids)
    s.explain_examples(wb)
    s.metrics = {
        "model alone: ID numbers read right": ratio(seq_alone, seq_clean),
        "model + rules: auto-decided ID numbers right": ratio(auto_right, auto),
        "model alone: digit accuracy": ratio(digits_alone, digits_total),
        "model + rules: digit accuracy (after corrections)": ratio(digits_rules, digits_total),
        "share sent to review": ratio(s.outcomes.get("review", 0), seq_clean),
        "damaged inputs rejected by the gate": ratio(damaged_rejected, damaged),
    }
    return s


def _maybe_example(s: PipelineSummary, x: DigitSequence, out: dict[str, Any], r: Any) -> None:
    action = str(out.get("action"))
    if any(e["kind"] == action for e in s.examples) or action == "accept":
        return
    if action == "rejected":
        title = f"{x.id}: picture {x.damaged} blanked -> rejected, the model was not called"
    else:
        verdict = "right" if str(out.get("number")) == x.number else "wrong"
        title = f"{x.id}: true {x.number}, model read {out.get('read')} -> {action} {out.get('number')} ({verdict})"
    s.examples.append({"kind": action, "title": title, "lines": [str(out.get("reason"))], "run_id": r.run_id})
