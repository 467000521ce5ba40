"""The `pipeline` row of `workbench bench generate`: a generate node with rails every 8 tokens vs the
bare engine, on the same requests, interleaved rounds.

Both sides stream the same text prompts (the workload's prompt tokens decoded) with the same
greedy parameters (EOS ignored, each request's own max_tokens) through the same `AsyncLLMEngine`
object (the catalogue's; prefix caching off, so that one side's cached prompts cannot speed up
the other); all requests arrive at once; the sides alternate which goes first each round.
`engine_async` awaits the engine's streams directly; `pipeline` runs `workbench run` on a
pipeline input -> generate (rails: knowledge_bases/bench/rails.clp every 8 tokens) -> output,
each run recorded in a SQLite store. Output tokens/s = generated tokens / wall time of the
round; the ratio pipeline / engine_async is per round.
"""

from __future__ import annotations

import asyncio
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

ROUNDS = 4
PIPELINE = """
name: bench_generate
nodes:
  - id: request
    type: input
  - id: generate
    type: generate
    model: demo-lm
    prompt: "{input.prompt}"
    max_tokens: "input.max_tokens"
    temperature: 0
    ignore_eos: true
    rails: {knowledge_base: rails, every: 8}
  - id: result
    type: output
    fields: {text: "generate.text", tokens: "generate.usage.completion_tokens", finish: "generate.finish_reason"}
edges:
  - {from: request, to: generate}
  - {from: generate, to: result}
"""


async def _bare(engine: Any, prompts: list[tuple[str, int]]) -> tuple[int, list[float], list[str]]:
    from neural.generation import SamplingParams

    async def one(p: str, o: int) -> Any:
        last = None
        async for out in engine.generate(p, SamplingParams(temperature=0, max_tokens=o, ignore_eos=True)):
            last = out
        return last

    outs = await asyncio.gather(*(one(p, o) for p, o in prompts))
    return sum(len(o.token_ids) for o in outs), [o.ttft for o in outs], [o.text for o in outs]


def run_pipeline_rows(
    tokenizer: Any, reqs: list[tuple[list[int], int]], block_size: int, max_batch: int
) -> tuple[list[dict], dict]:
    """Rows `engine_async` and `pipeline` (best round of each) and the EXTRA facts (per-round ratios)."""
    from neural.generation import DEMO_LM_DIR
    from workbench import Workbench
    from workbench.config import load_settings
    from workbench.pipeline import Pipeline

    root = Path(__file__).resolve().parents[2]
    prompts = [(tokenizer.decode(p), o) for p, o in reqs]
    tmp = Path(tempfile.mkdtemp(prefix="bench-generate-"))
    (tmp / "catalog.yaml").write_text(
        f"models:\n  - {{name: demo-lm, format: hf, path: {DEMO_LM_DIR}, task: causal-lm, engine: "
        f"{{device: cpu, block_size: {block_size}, max_num_seqs: {max_batch}, max_model_len: 512, "
        "enable_prefix_caching: false}}\n"
    )
    wb = Workbench(
        load_settings(database_url=f"sqlite:///{tmp / 'runs.sqlite3'}"),
        knowledge_base_dir=root / "knowledge_bases" / "bench",
        pipeline_dir=tmp,
        model_catalog=tmp / "catalog.yaml",
    )
    pipe = Pipeline.from_yaml(PIPELINE)
    inputs = [{"prompt": p, "max_tokens": o} for p, o in prompts]
    best: dict[str, dict] = {}
    ratios, same_text = [], None
    try:
        wb.run_sync(pipe, inputs[0], raise_on_error=True)  # load the model, validate, warm both paths
        bare_engine = wb.catalog.get("demo-lm").backend  # the same engine object: only the pipeline differs
        asyncio.run(_bare(bare_engine, prompts[:1]))
        for r in range(ROUNDS):
            for side in ("bare", "pipeline") if r % 2 == 0 else ("pipeline", "bare"):  # alternate the order
                t0 = time.perf_counter()
                if side == "bare":
                    tokens, _, bare_text = asyncio.run(_bare(bare_engine, prompts))
                    bare_s = time.perf_counter() - t0
                else:
                    results = wb.run_many_sync(pipe, inputs, concurrency=len(inputs))
                    pipe_s = time.perf_counter() - t0
            bad = [r for r in results if isinstance(r, BaseException) or not r.ok]
            if bad:
                raise RuntimeError(f"bench pipeline run failed: {bad[0]!r}")
            ptokens = sum(r.outputs["tokens"] for r in results)
            rate_bare, rate_pipe = tokens / bare_s, ptokens / pipe_s
            ratios.append(round(rate_pipe / rate_bare, 4))
            same_text = sum(r.outputs["text"] == t for r, t in zip(results, bare_text))
            for name, rate, secs, n in (
                ("engine_async", rate_bare, bare_s, tokens),
                ("pipeline", rate_pipe, pipe_s, ptokens),
            ):
                if name not in best or rate > best[name]["output_tokens_per_s"]:
                    best[name] = {
                        "engine": name,
                        "output_tokens_per_s": round(rate, 1),
                        "seconds": round(secs, 3),
                        "output_tokens": n,
                    }
    finally:
        wb.close()
        shutil.rmtree(tmp, ignore_errors=True)
    extra = {
        "pipeline_rounds": ROUNDS,
        "pipeline_over_engine_tokens_per_s_by_round": ratios,
        "pipeline_rails_cost_fraction": round(1 - statistics.median(ratios), 4) if ratios else None,
        "pipeline_texts_equal_engine": same_text,
        "pipeline_rails_every_tokens": 8,
    }
    return [best["engine_async"], best["pipeline"]], extra
