"""`workbench bench pipeline`: pipeline overhead (graph + rules + store) over the bare model call.

The model is the real all-MiniLM-L6-v2 behind its dynamic batcher. `bare_model` awaits
`entry.infer(text)` directly; `pipeline` runs input -> gate (CLIPS) -> model -> postprocess
(CLIPS) -> output, with every run and its trace recorded in a SQLite store (WAL). Both modes
use the same batcher, sentences and concurrency (1 and 32 requests in flight).
Rows: `{"mode": "bare_model"|"pipeline", "concurrency", "p50_ms", "p99_ms", "throughput_rps"}`;
`EXTRA["overhead"]` gives the pipeline's p50 overhead in percent of the bare p50 (goal <= 15%).
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from pathlib import Path
from typing import Any

from .report import percentile_ms

EXTRA: dict[str, Any] = {}

RULES = """
(deftemplate message (slot length (type INTEGER)))
(deftemplate route (slot branch))
(deftemplate embedding-stats (slot norm (type NUMBER)) (slot first (type NUMBER)))
(deftemplate decision (slot action))
(defrule refuse-empty (message (length 0)) => (assert (route (branch refuse))))
(defrule embed (message (length ?n&:(> ?n 0))) => (assert (route (branch embed))))
(defrule positive (embedding-stats (first ?f&:(>= ?f 0))) => (assert (decision (action keep))))
(defrule negative (embedding-stats (first ?f&:(< ?f 0))) => (assert (decision (action flip))))
"""

WORDS = (
    "the parcel never arrived and I would like a refund for the order placed last week please advise "
    "what time does the shop open on sunday can I change my delivery address to the office"
).split()


def _sentences(n: int) -> list[str]:
    import random

    rng = random.Random(7)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 40))) for _ in range(n)]


def _pipeline():
    from workbench.pipeline import Pipeline

    p = Pipeline("bench_pipeline")
    p.add_node(
        "msg",
        "input",
        schema={"type": "object", "required": ["text"], "properties": {"text": {"type": "string"}}},
        facts=[{"template": "message", "slots": {"length": "len(input.text)"}}],
    )
    p.add_node("gate", "gate", knowledge_base="bench")
    p.add_node(
        "embed",
        "model",
        model="all-MiniLM-L6-v2",
        inputs={"text": "input.text"},
        facts=[
            {
                "template": "embedding-stats",
                "slots": {"norm": "norm(sentence_embedding)", "first": "sentence_embedding[0]"},
            }
        ],
    )
    p.add_node("post", "postprocess", knowledge_base="bench", emit=["decision"])
    p.add_node("out", "output", fields={"action": {"expr": "decision.action", "default": "refused"}})
    p.connect("msg", "gate")
    p.connect("gate", "embed", when="embed")
    p.connect("embed", "post")
    p.connect("post", "out")
    p.connect("gate", "out", when="refuse")
    return p


async def _measure(call, items: list[str], concurrency: int) -> tuple[list[float], float]:
    sem = asyncio.Semaphore(concurrency)
    lat: list[float] = []

    async def one(x: str) -> None:
        async with sem:
            t = time.perf_counter()
            await call(x)
            lat.append(time.perf_counter() - t)

    t0 = time.perf_counter()
    await asyncio.gather(*(one(x) for x in items))
    return lat, time.perf_counter() - t0


def _row(mode: str, c: int, lat: list[float], wall: float) -> dict[str, Any]:
    return {
        "mode": mode,
        "concurrency": c,
        "p50_ms": percentile_ms(lat, 50, 3),
        "p99_ms": percentile_ms(lat, 99, 3),
        "throughput_rps": round(len(lat) / wall, 2),
    }


def run(quick: bool = False) -> list[dict[str, Any]]:
    """Measure both modes at concurrency 1 and 32; returns the rows (see module docstring)."""
    import os

    import torch

    from neural.batching import BatcherConfig
    from workbench import Workbench
    from workbench.config import load_settings
    from workbench.pipeline.catalog import MINILM

    # Intra-op threads: on a small shared CPU, 2+ OpenMP threads per call made MiniLM ~15x slower
    # here (785 ms vs 54 ms per sentence at load 9 on 2 cores); one thread per core pair is steadier.
    torch.set_num_threads(max(1, min(4, (os.cpu_count() or 2) // 2)))
    work = Path(tempfile.mkdtemp(prefix="wb-bench-pipeline-"))
    (work / "kb").mkdir()
    (work / "kb" / "bench.clp").write_text(RULES)
    settings = load_settings(database_url=f"sqlite:///{work / 'bench.sqlite3'}")
    wb = Workbench(
        settings, knowledge_base_dir=work / "kb", pipeline_dir=work / "pipelines", model_catalog=work / "none.yaml"
    )
    rows: list[dict[str, Any]] = []
    try:
        from neural import loaders

        spec = wb.catalog.specs()[MINILM]
        entry = loaders.load_hf_dir(
            spec.path,
            name=MINILM,
            task="embedding",
            batcher_config=BatcherConfig(max_batch_size=32, max_queue_delay_ms=2.0),
        )
        wb.register_model_entry(entry)
        p = _pipeline()
        wb.check(p)
        n1, n32 = (16, 64) if quick else (128, 512)
        rounds = 2 if quick else 4
        sents = _sentences(max(n1, n32))

        async def bare(x: str) -> Any:
            return await entry.infer(x)

        async def piped(x: str) -> Any:
            r = await wb.run(p, {"text": x}, validate=False)
            assert r.ok, r.error
            return r

        async def main() -> None:
            await wb.run(p, {"text": "warm up"})  # stores the version, builds the CLIPS environments
            for c, n in ((1, n1), (32, n32)):
                lat: dict[str, list[float]] = {"bare_model": [], "pipeline": []}
                wall = {"bare_model": 0.0, "pipeline": 0.0}
                for call in (bare, piped):
                    await _measure(call, sents[:8], min(c, 8))  # warm-up
                # alternate the modes in rounds so that a change of machine load hits both alike
                for r in range(rounds):
                    chunk = sents[r * n // rounds : (r + 1) * n // rounds]
                    for mode, call in (("bare_model", bare), ("pipeline", piped)):
                        latencies, w = await _measure(call, chunk, c)
                        lat[mode] += latencies
                        wall[mode] += w
                for mode in ("bare_model", "pipeline"):
                    rows.append(_row(mode, c, lat[mode], wall[mode]))

        asyncio.run(main())
        overhead = {}
        for c in (1, 32):
            b = next(r for r in rows if r["mode"] == "bare_model" and r["concurrency"] == c)
            q = next(r for r in rows if r["mode"] == "pipeline" and r["concurrency"] == c)
            overhead[str(c)] = round(100.0 * (q["p50_ms"] - b["p50_ms"]) / b["p50_ms"], 1)
        EXTRA.update(
            {
                "model": MINILM,
                "torch_threads": torch.get_num_threads(),
                "overhead_p50_pct": overhead,
                "goal": "pipeline p50 overhead <= 15% of the bare model p50",
                "note": "pipeline mode records every run and its trace in SQLite (WAL) before returning",
            }
        )
    finally:
        wb.close()
    return rows
