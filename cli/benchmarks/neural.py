"""`workbench bench neural`: all-MiniLM-L6-v2 under dynamic batching vs one request at a time.

256 sentences of mixed length (1-8 consecutive lines of tinyshakespeare) are sent by C concurrent
clients (C = 1, 8, 32, 64), each awaiting one request at a time. "dynamic": the model's dynamic
batcher (max_batch_size 32, max_queue_delay_ms 5; on CPU one queue and length-homogeneous
micro-batches inside each batch, on GPU length buckets padded to the bucket bound). "sequential": the same model,
threads and queue with max_batch_size 1 (one request per model call). Backends: PyTorch and ONNX
Runtime (the verified export of the same weights), with the same intra-op thread count.

Rows: {"mode", "backend", "concurrency", "throughput_rps", "p50_ms", "p95_ms", "p99_ms", "mean_batch_size",
"achieved_gflops"}.
EXTRA["goals"]: per backend at concurrency 32, whether dynamic >= 4x sequential throughput and
whether p99 <= max_queue_delay_ms + 2 x the median batch compute time.
EXTRA["ceiling"]: how much batching can gain on this machine at all. Batching helps when one
request alone leaves the hardware idle; on a CPU a request of median length already keeps the
matrix units fairly busy. Measured with the same thread count: the GFLOP/s of the model's
largest matrix product (tokens x hidden -> intermediate) for one median-length request and for
a full batch of them, the model's FLOPs per request (BERT encoder: 2 x (4 h^2 + 2 h i) per token
per layer for the linear layers, 4 n^2 h per layer for attention; embeddings, norms and
activations not counted), the GFLOP/s each row achieved, and so the largest speed-up over
sequential that a batch running at the full-batch matrix-product rate could give.
"""

from __future__ import annotations

import asyncio
import os
import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from .report import percentile_ms

EXTRA: dict[str, Any] = {}

N_SENTENCES = 256
CONCURRENCY = (1, 8, 32, 64)
MAX_BATCH = 32
MAX_DELAY_MS = 5.0
BUCKETS = (16, 32, 64, 128, 256)


def sentences(n: int = N_SENTENCES, seed: int = 0) -> list[str]:
    """`n` texts of 1-8 consecutive non-empty lines from tinyshakespeare (repo copy, else ../shared/data)."""
    root = Path(__file__).resolve().parents[2]
    for path in (root / "data" / "tinyshakespeare.txt", root.parent / "shared" / "data" / "tinyshakespeare.txt"):
        if path.is_file():
            lines = [ln.strip() for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()]
            break
    else:
        raise FileNotFoundError("tinyshakespeare.txt not found in data/ or ../shared/data/")
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        k = rng.randint(1, 8)
        start = rng.randrange(0, len(lines) - k)
        out.append(" ".join(lines[start : start + k]))
    return out


async def _drive(batcher, items: list[Any], concurrency: int) -> tuple[float, list[float]]:
    queue = list(reversed(items))
    latencies: list[float] = []

    async def client() -> None:
        while queue:
            item = queue.pop()
            t0 = time.perf_counter()
            await batcher.submit(item).wait()
            latencies.append(time.perf_counter() - t0)

    t0 = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(concurrency)))
    return time.perf_counter() - t0, latencies


def run(quick: bool = False) -> list[dict[str, Any]]:
    import torch

    from neural import BatcherConfig, DynamicBatcher, ModelRegistry, register_minilm

    # Both modes and both backends use the same intra-op thread count: half the cores (at most 4),
    # since oversubscribed OpenMP pools stall badly on a shared machine. WORKBENCH_BENCH_THREADS overrides.
    threads = int(os.environ.get("WORKBENCH_BENCH_THREADS") or max(1, min(4, (os.cpu_count() or 2) // 2)))
    torch.set_num_threads(threads)
    texts = sentences(64 if quick else N_SENTENCES)
    levels = (1, 8, 32) if quick else CONCURRENCY
    registry = ModelRegistry()
    cache = Path(os.environ.get("WORKBENCH_ONNX_CACHE") or Path(tempfile.gettempdir()) / "workbench-onnx-cache")
    entries = {
        "torch": register_minilm(registry, device="cpu" if quick else None),
        "onnxruntime": register_minilm(
            registry,
            backend="onnxruntime",
            onnx_cache_dir=cache,
            intra_op_threads=threads,
            device="cpu" if quick else None,
        ),
    }
    rows: list[dict[str, Any]] = []
    compute: dict[tuple[str, int], float] = {}
    lengths = [entries["torch"].runner.prepare(t).length for t in texts]
    # CPU inference is compute-bound, so padding costs as much as real tokens: the batcher takes
    # everything queued (no buckets) and the text runner splits each batch into length-homogeneous
    # micro-batches (neural.text.microbatch). On a GPU padding is cheap: length buckets, batches
    # filled from smaller buckets and padded to the bucket bound (fixed shapes), no split.
    on_gpu = entries["torch"].device.startswith("cuda")
    for backend, entry in entries.items():
        prepared = [entry.runner.prepare(t) for t in texts]
        for mode in ("sequential", "dynamic"):
            cfg = BatcherConfig(
                max_batch_size=1 if mode == "sequential" else MAX_BATCH,
                max_queue_delay_ms=0.0 if mode == "sequential" else MAX_DELAY_MS,
                max_queue_size=4096,
                buckets=BUCKETS if on_gpu else None,
                pad_to_bucket=True,
            )
            batcher = DynamicBatcher(
                f"bench-{backend}-{mode}", entry.runner.run_batch, cfg, length_fn=entry.runner.item_length
            )
            asyncio.run(_drive(batcher, prepared[:16], 4))  # warm-up: allocator, thread pools, kernels
            for c in levels:
                batcher.reset_stats()
                wall, lat = asyncio.run(_drive(batcher, prepared, c))
                rows.append(
                    {
                        "mode": mode,
                        "backend": backend,
                        "concurrency": c,
                        "throughput_rps": round(len(prepared) / wall, 2),
                        "p50_ms": percentile_ms(lat, 50),
                        "p95_ms": percentile_ms(lat, 95),
                        "p99_ms": percentile_ms(lat, 99),
                        "mean_batch_size": round(batcher.stats.mean_batch_size, 2),
                    }
                )
                if mode == "dynamic":
                    compute[(backend, c)] = statistics.median(r.compute_s for r in batcher.batch_log)
            batcher.close()
    registry.close()
    _goals(rows, compute, levels)
    EXTRA["ceiling"] = _ceiling(rows, threads, lengths)
    EXTRA.update(
        {
            "config": {
                "max_batch_size": MAX_BATCH,
                "max_queue_delay_ms": MAX_DELAY_MS,
                "buckets": list(BUCKETS),
                "buckets_used": on_gpu,
                "micro_batch_overhead_tokens": {b: e.runner.micro_batch_overhead_tokens for b, e in entries.items()},
                "threads": threads,
                "sentences": len(texts),
                "tokens_min_median_max": [min(lengths), int(statistics.median(lengths)), max(lengths)],
                "device": entries["torch"].device,
                "onnx_providers": entries["onnxruntime"].backend.providers,
            },
            "load_average": os.getloadavg() if hasattr(os, "getloadavg") else None,
        }
    )
    return rows


def _model_flops(n_tokens: int) -> float:
    """FLOPs of one all-MiniLM-L6-v2 forward pass over `n_tokens` tokens (see the module docstring)."""
    import json

    from neural.minilm import minilm_dir

    cfg = json.loads((minilm_dir() / "config.json").read_text())
    h, i, layers = cfg["hidden_size"], cfg["intermediate_size"], cfg["num_hidden_layers"]
    return layers * (2 * (4 * h * h + 2 * h * i) * n_tokens + 4 * n_tokens * n_tokens * h)


def _gemm_gflops(m: int, k: int, n: int, seconds: float = 1.0) -> float:
    """GFLOP/s of an (m x k) @ (k x n) float32 product with torch's current thread count."""
    import torch

    x, w = torch.randn(m, k), torch.randn(n, k)
    with torch.inference_mode():
        for _ in range(3):
            torch.nn.functional.linear(x, w)
        reps, t0 = 0, time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            torch.nn.functional.linear(x, w)
            reps += 1
        dt = (time.perf_counter() - t0) / reps
    return 2 * m * k * n / dt / 1e9


def _ceiling(rows: list[dict[str, Any]], threads: int, lengths: list[int]) -> dict[str, Any]:
    import torch

    torch.set_num_threads(threads)
    median = int(statistics.median(lengths))
    flops = statistics.mean(_model_flops(n) for n in lengths)
    one = _gemm_gflops(median, 384, 1536)
    full = _gemm_gflops(median * MAX_BATCH, 384, 1536)
    for r in rows:
        r["achieved_gflops"] = round(r["throughput_rps"] * flops / 1e9, 1)
    out: dict[str, Any] = {
        "threads": threads,
        "model_gflop_per_request_mean": round(flops / 1e9, 3),
        "gemm_gflops_one_request": round(one, 1),
        "gemm_gflops_full_batch": round(full, 1),
    }
    for backend in ("torch", "onnxruntime"):
        seq = [r for r in rows if r["backend"] == backend and r["mode"] == "sequential"]
        best = max(r["achieved_gflops"] for r in seq)
        out[backend] = {
            "sequential_gflops": best,
            "sequential_share_of_full_batch_rate": round(best / full, 2),
            "max_speedup_if_batches_ran_at_full_batch_rate": round(full / best, 2),
        }
    return out


def _goals(rows: list[dict[str, Any]], compute: dict[tuple[str, int], float], levels) -> None:
    c = 32 if 32 in levels else max(levels)
    goals = {}
    for backend in ("torch", "onnxruntime"):
        seq = next(r for r in rows if r["backend"] == backend and r["mode"] == "sequential" and r["concurrency"] == c)
        dyn = next(r for r in rows if r["backend"] == backend and r["mode"] == "dynamic" and r["concurrency"] == c)
        speedup = dyn["throughput_rps"] / seq["throughput_rps"]
        bound = MAX_DELAY_MS + 2 * 1000 * compute[(backend, c)]
        goals[backend] = {
            "concurrency": c,
            "speedup": round(speedup, 2),
            "speedup_goal_4x_met": speedup >= 4.0,
            "p99_ms": dyn["p99_ms"],
            "median_batch_compute_ms": round(1000 * compute[(backend, c)], 2),
            "p99_bound_ms": round(bound, 2),
            "p99_goal_met": dyn["p99_ms"] <= bound,
        }
    EXTRA["goals"] = goals
