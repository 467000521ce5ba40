"""Part 2 of `workbench demo`: the intents pipeline on the labelled held-out requests."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .summary import PipelineSummary, ratio

PIPELINE = "demo_intents"
MODEL_NODES = ("embed", "router")
HELDOUT_FILE = Path(__file__).resolve().parents[2] / "data" / "intents" / "heldout.jsonl"


def intents_inputs(quick: bool = False) -> list[dict[str, Any]]:
    """Held-out requests `{"text", "intent" (None: out of scope), "action" (expected)}`.

    Quick: the first request of each expected action and of a few intents (tests)."""
    rows = [json.loads(line) for line in HELDOUT_FILE.read_text().splitlines() if line.strip()]
    if not quick:
        return rows
    picked: list[dict[str, Any]] = []
    seen: set[str] = set()
    for r in rows:
        key = r["action"] if r["action"] != "answer" else f"answer:{r['intent']}"
        if key not in seen and len(picked) < 10:
            seen.add(key)
            picked.append(r)
    return picked


async def run_intents(
    wb: Any, *, quick: bool = False, concurrency: int = 32, progress: Callable[[int, int], None] | None = None
) -> PipelineSummary:
    """Run `demo_intents` on the held-out requests (all runs recorded) and score them against
    their labels: the intent (model alone = the router's top intent; model + rules = the intent
    the policy acted on, overrides included) and the expected action."""
    s = PipelineSummary(
        PIPELINE, "intents: MiniLM similarity routing with policy rules that gate, override and explain"
    )
    rows = intents_inputs(quick)
    s.inputs = len(rows)
    done = 0

    def on_result(i: int, r: Any) -> None:
        nonlocal done
        done += 1
        if progress:
            progress(done, len(rows))

    t0 = time.perf_counter()
    results = await wb.run_many(
        PIPELINE,
        [{"id": f"heldout-{i:03d}", "text": r["text"]} for i, r in enumerate(rows)],
        concurrency=concurrency,
        on_result=on_result,
    )
    s.seconds = time.perf_counter() - t0
    run_ids: list[str] = []
    in_scope = alone = with_rules = actions_right = overrides = overrides_right = 0
    for i, (row, r) in enumerate(zip(rows, results)):
        out = s.tally(f"heldout-{i:03d}", r, MODEL_NODES, run_ids)
        if out is None:
            continue
        action = str(out.get("action"))
        actions_right += action == row["action"]
        if row["intent"] is not None and action != "blocked":
            in_scope += 1
            alone += str(out.get("model_intent")) == row["intent"]
            with_rules += str(out.get("intent")) == row["intent"]
        if out.get("overridden_from"):
            overrides += 1
            overrides_right += str(out.get("intent")) == row["intent"]
        _maybe_example(s, row, out, r)
    s.add_traces(wb.store, run_ids)
    s.explain_examples(wb)
    s.metrics = {
        "model alone: intent accuracy": ratio(alone, in_scope),
        "model + rules: intent accuracy": ratio(with_rules, in_scope),
        "rules: overrides that were right": ratio(overrides_right, overrides),
        "model + rules: action as labelled": ratio(actions_right, len(rows) - s.failed),
        "share sent to clarify": ratio(s.outcomes.get("clarify", 0), len(rows) - s.failed),
    }
    return s


def _maybe_example(s: PipelineSummary, row: dict[str, Any], out: dict[str, Any], r: Any) -> None:
    kind = "override" if out.get("overridden_from") else str(out.get("action"))
    if kind == "answer" or any(e["kind"] == kind for e in s.examples):
        return
    lines = [
        f"decision: {out.get('action')} intent={out.get('intent')} queue={out.get('queue')} -- {out.get('reason')}"
    ]
    if out.get("similarity") is not None:
        lines.append(
            f'evidence: nearest labelled example "{out.get("evidence")}"; similarity {out["similarity"]:.3f}, '
            f"margin {out.get('margin') or 0:.3f} over the runner-up"
        )
    if out.get("overridden_from"):
        lines.append(
            f"override: the model said {out['overridden_from']}; a policy rule changed it to {out.get('intent')}"
        )
    s.examples.append(
        {
            "kind": kind,
            "title": f'"{row["text"]}" (labelled {row["intent"]} / {row["action"]})',
            "lines": lines,
            "run_id": r.run_id,
        }
    )
