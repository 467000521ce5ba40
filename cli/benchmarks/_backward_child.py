"""One measured run of the backward prover for `workbench bench backward` (run by path, so that
the `cli` package and its typer app are not imported): load, prove (answers counted, not kept),
print one JSON line `{"answers", "load_s", "prove_s", "first_answer_s"}`."""

from __future__ import annotations

import json
import sys
import time

TIMEOUT_S = 600.0


def _child(clp: str, goal: str) -> None:
    """One measured run of our prover: load, prove (answers counted, not kept), print one JSON line."""
    t0 = time.perf_counter()
    import rules
    from chaining.backward import ProverConfig, Session

    kb = rules.load_knowledge_base(clp)
    session = Session(kb, config=ProverConfig(timeout=TIMEOUT_S))
    t1 = time.perf_counter()
    first: list[float] = []

    def on_answer(_a) -> None:
        if not first:
            first.append(time.perf_counter() - t1)

    result = session.prove_sync(goal, on_answer=on_answer, keep=False, proofs=False)  # as `kb ask --json`
    t2 = time.perf_counter()
    doc = {
        "answers": result.count,
        "load_s": round(t1 - t0, 3),
        "prove_s": round(t2 - t1, 3),
        "first_answer_s": round(first[0], 4) if first else None,
    }
    print(json.dumps(doc))


if __name__ == "__main__":
    _child(sys.argv[1], sys.argv[2])
