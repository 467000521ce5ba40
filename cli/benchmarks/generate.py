"""`workbench bench generate`: continuous batching over a paged KV cache vs transformers generate.

Workload: 64 requests on the demo LM (models/demo-lm), prompts of 32-256 tokens cut from Tiny
Shakespeare and output lengths of 16-256 tokens, both drawn from a fixed seed; greedy; EOS
ignored so every request generates exactly its length. All requests arrive at t=0. Engines:

* hf_sequential: `transformers` generate, one request at a time;
* hf_static: `transformers` generate on static batches of MAX_BATCH requests in arrival order
  (left padding; a batch runs until its longest request is done);
* workbench: our engine, max_num_seqs = MAX_BATCH;
* engine_async / pipeline: the same requests as text through the streaming engine, bare and as
  a pipeline's generate node with rails every 8 tokens (cli/benchmarks/_generate_pipeline.py).
  `WORKBENCH_BENCH_GENERATE_ONLY=pipeline` runs only these two rows.

Same model, float32, same torch thread count. Times per token come from a logits processor
(transformers) or the engine's outputs (ours). KV-cache bytes are averaged over decode steps:
`kv_reserved_bytes` is memory set aside for the batch's keys/values (our allocated blocks; the
transformers cache's padded [batch, length] tensors), `kv_used_bytes` the part holding real
tokens. EXTRA holds what a contiguous per-sequence preallocation (max_model_len per slot)
would reserve, and a check that our greedy tokens equal transformers' sequential ones.
"""

from __future__ import annotations

import os
import random
import statistics
import time
from typing import Any

import torch

from .report import percentile_ms

NUM_REQUESTS = 64
MAX_BATCH = 32
THREADS = int(os.environ.get("WORKBENCH_BENCH_THREADS", "1"))  # 1: the CPUs here are shared
SEED = 0
BLOCK_SIZE = 16
EXTRA: dict[str, Any] = {}


def workload(tokenizer, n: int, quick: bool) -> list[tuple[list[int], int]]:
    """n (prompt token ids, output length) pairs from a fixed seed."""
    from neural.generation.demo import DEMO_LM_DIR

    text = (DEMO_LM_DIR.parents[1] / "data" / "tinyshakespeare.txt").read_text(encoding="utf-8")[:300_000]
    corpus = tokenizer.encode(text).ids
    rng = random.Random(SEED)
    out = []
    for _ in range(n):
        plen = rng.randint(32, 256)
        olen = rng.randint(16, 64 if quick else 256)
        start = rng.randrange(0, len(corpus) - plen)
        out.append((corpus[start : start + plen], olen))
    return out


def _row(
    engine: str, total_tokens: int, seconds: float, ttft: list[float], tpot: list[float], reserved: float, used: float
) -> dict:
    return {
        "engine": engine,
        "output_tokens_per_s": round(total_tokens / seconds, 1),
        "ttft_p50_ms": percentile_ms(ttft, 50, 1),
        "ttft_p99_ms": percentile_ms(ttft, 99, 1),
        "tpot_p50_ms": percentile_ms(tpot, 50),
        "tpot_p99_ms": percentile_ms(tpot, 99),
        "kv_reserved_bytes": int(reserved),
        "kv_used_bytes": int(used),
    }


class _StepClock:
    """A transformers logits processor that only timestamps each decoding step."""

    def __init__(self) -> None:
        self.times: list[float] = []

    def __call__(self, input_ids, scores):
        self.times.append(time.perf_counter())
        return scores


def _hf_generate(model, batch: list[tuple[list[int], int]], pad_id: int) -> tuple[list[list[int]], list[float]]:
    from transformers import LogitsProcessorList

    width = max(len(p) for p, _ in batch)
    ids = torch.full((len(batch), width), pad_id, dtype=torch.long)
    mask = torch.zeros_like(ids)
    for i, (p, _) in enumerate(batch):
        ids[i, width - len(p) :] = torch.tensor(p)
        mask[i, width - len(p) :] = 1
    clock = _StepClock()
    n = max(o for _, o in batch)
    with torch.inference_mode():
        out = model.generate(
            ids,
            attention_mask=mask,
            max_new_tokens=n,
            do_sample=False,
            pad_token_id=pad_id,
            logits_processor=LogitsProcessorList([clock]),
        )
    return [out[i, width : width + o].tolist() for i, (_, o) in enumerate(batch)], clock.times


def run_hf(model, reqs, batch_size: int, bytes_per_token: int) -> tuple[dict, list[list[int]]]:
    t0 = time.perf_counter()
    ttft, tpot, tokens = [], [], []
    reserved_steps, used_steps = [], []
    for b in range(0, len(reqs), batch_size):
        batch = reqs[b : b + batch_size]
        outs, times = _hf_generate(model, batch, 0)
        tokens.extend(outs)
        width = max(len(p) for p, _ in batch)
        for _prompt, o in batch:
            ttft.append(times[0] - t0)
            if o > 1:
                tpot.append((times[o - 1] - times[0]) / (o - 1))
        for step in range(len(times)):
            reserved_steps.append(len(batch) * (width + step + 1) * bytes_per_token)
            used_steps.append(sum(len(p) + min(step + 1, o) for p, o in batch) * bytes_per_token)
    seconds = time.perf_counter() - t0
    total = sum(o for _, o in reqs)
    name = "hf_sequential" if batch_size == 1 else "hf_static"
    return _row(
        name, total, seconds, ttft, tpot, statistics.fmean(reserved_steps), statistics.fmean(used_steps)
    ), tokens


def run_ours(engine, reqs, bytes_per_token: int) -> tuple[dict, list[list[int]]]:
    from neural.generation import SamplingParams

    t0 = time.perf_counter()
    for i, (p, o) in enumerate(reqs):
        engine.add_request(str(i), p, SamplingParams(temperature=0, max_tokens=o, ignore_eos=True), arrival_time=t0)
    done = {}
    reserved_steps, used_steps = [], []
    bs = engine.config.block_size
    while engine.has_unfinished_requests():
        step = engine.step()
        if step.num_decode_tokens:
            reserved_steps.append(step.kv_blocks_used * bs * bytes_per_token)
            used_steps.append(step.kv_tokens * bytes_per_token)
        for out in step.outputs:
            if out.finished:
                done[out.request_id] = out
    seconds = time.perf_counter() - t0
    outs = [done[str(i)] for i in range(len(reqs))]
    ttft = [o.ttft for o in outs]
    tpot = [o.tpot for o in outs if o.tpot is not None]
    EXTRA["workbench_preemptions"] = engine.scheduler.num_preemptions
    EXTRA["workbench_prefix_cache_hit_rate"] = round(engine.block_manager.hit_rate, 4)
    total = sum(len(o.token_ids) for o in outs)
    return _row(
        "workbench", total, seconds, ttft, tpot, statistics.fmean(reserved_steps), statistics.fmean(used_steps)
    ), [o.token_ids for o in outs]


def run_prefix_sharing(tokenizer, quick: bool) -> dict:
    """Our engine with prefix caching on vs off on requests sharing a 192-token prefix (EXTRA only)."""
    from neural.generation import DEMO_LM_DIR, EngineConfig, LLMEngine, SamplingParams

    reqs = workload(tokenizer, 8 if quick else 32, True)
    shared = reqs[0][0][:32] * 6  # 192 tokens
    result = {}
    for caching in (True, False):
        engine = LLMEngine(
            DEMO_LM_DIR,
            EngineConfig(
                device="cpu",
                block_size=BLOCK_SIZE,
                max_num_seqs=MAX_BATCH,
                max_model_len=512,
                enable_prefix_caching=caching,
            ),
        )
        t0 = time.perf_counter()
        outs = engine.generate(
            [shared + p[:48] for p, _ in reqs], SamplingParams(temperature=0, max_tokens=32, ignore_eos=True)
        )
        seconds = time.perf_counter() - t0
        result["on" if caching else "off"] = {
            "seconds": round(seconds, 3),
            "ttft_p50_ms": percentile_ms([o.ttft for o in outs], 50, 1),
            "prefix_cache_hit_rate": round(engine.block_manager.hit_rate, 4),
            "cached_prompt_tokens": sum(o.num_cached_tokens for o in outs),
        }
    return result


def run(quick: bool = False) -> list[dict]:
    """Rows for hf_sequential, hf_static and workbench (see the module docstring)."""
    from transformers import AutoModelForCausalLM

    from neural.generation import DEMO_LM_DIR, EngineConfig, LLMEngine

    torch.set_num_threads(THREADS)
    n = 8 if quick else NUM_REQUESTS
    max_model_len = 512
    engine = LLMEngine(
        DEMO_LM_DIR,
        EngineConfig(
            device="cpu",
            block_size=BLOCK_SIZE,
            max_num_seqs=MAX_BATCH,
            max_num_batched_tokens=2048,
            max_model_len=max_model_len,
            enable_prefix_caching=True,
        ),
    )
    spec = engine.spec
    bytes_per_token = spec.kv_bytes_per_token * 4  # float32
    reqs = workload(engine.tokenizer, n, quick)
    if os.environ.get("WORKBENCH_BENCH_GENERATE_ONLY") == "pipeline":
        from ._generate_pipeline import run_pipeline_rows

        rows, extra = run_pipeline_rows(engine.tokenizer, reqs, BLOCK_SIZE, MAX_BATCH)
        EXTRA.update(extra, requests=n, threads=THREADS)
        return rows
    hf = AutoModelForCausalLM.from_pretrained(DEMO_LM_DIR, dtype=torch.float32).eval()
    hf.generation_config.eos_token_id = None  # EOS ignored: every request runs to its length
    hf.config.eos_token_id = None
    rows = []
    ours, our_tokens = run_ours(engine, reqs, bytes_per_token)
    static, static_tokens = run_hf(hf, reqs, MAX_BATCH, bytes_per_token)
    seq, seq_tokens = run_hf(hf, reqs, 1, bytes_per_token)
    rows = [seq, static, ours]
    from ._generate_pipeline import run_pipeline_rows

    pipeline_rows, extra = run_pipeline_rows(engine.tokenizer, reqs, BLOCK_SIZE, MAX_BATCH)
    rows += pipeline_rows
    EXTRA.update(extra)
    EXTRA["prefix_sharing_192_tokens"] = run_prefix_sharing(engine.tokenizer, quick)
    EXTRA.update(
        {
            "requests": n,
            "max_batch_size": MAX_BATCH,
            "threads": THREADS,
            "block_size": BLOCK_SIZE,
            "model": str(DEMO_LM_DIR.name),
            "output_tokens": sum(o for _, o in reqs),
            "prompt_tokens": sum(len(p) for p, _ in reqs),
            "kv_bytes_per_token": bytes_per_token,
            "workbench_kv_pool_bytes": engine.runner.kv_cache_bytes,
            "contiguous_prealloc_bytes": MAX_BATCH * max_model_len * bytes_per_token,
            "workbench_kv_unused_fraction": round(1 - ours["kv_used_bytes"] / ours["kv_reserved_bytes"], 4),
            "hf_static_kv_unused_fraction": round(1 - static["kv_used_bytes"] / static["kv_reserved_bytes"], 4),
            "speedup_vs_hf_sequential": round(ours["output_tokens_per_s"] / seq["output_tokens_per_s"], 2),
            "speedup_vs_hf_static": round(ours["output_tokens_per_s"] / static["output_tokens_per_s"], 2),
            "greedy_tokens_equal_hf_sequential": sum(a == b for a, b in zip(our_tokens, seq_tokens)),
            "hf_static_tokens_equal_hf_sequential": sum(a == b for a, b in zip(static_tokens, seq_tokens)),
        }
    )
    return rows
