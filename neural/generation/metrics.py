"""Prometheus metrics of the generation engine, in vLLM's terms under the `workbench_` prefix.

vLLM name -> ours: vllm:time_to_first_token_seconds -> workbench_time_to_first_token_seconds,
vllm:time_per_output_token_seconds / inter_token_latency_seconds, e2e_request_latency_seconds,
request_queue_time_seconds, prompt_tokens_total, generation_tokens_total,
num_requests_running, num_requests_waiting, kv_cache_usage_perc, num_preemptions_total,
prefix_cache_queries_total, prefix_cache_hits_total (tokens), request_success_total. We add
workbench_prefix_cache_hit_rate (hits / queries since start) for dashboards without PromQL.
Every value comes from a `StepOutput` (`observe`), never from timers of its own.
Collectors are created once per registry and labelled by `model` (the label the rest of the
neural runtime uses; vLLM calls it `model_name`), so several engines (and tests) share them
without duplicate-registration errors. The default registry is `neural.METRICS_REGISTRY`,
the one front ends expose at `/metrics`.
"""

from __future__ import annotations

import threading

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from ..metrics import METRICS_REGISTRY
from .outputs import StepOutput

_LAT = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0)
_TOK = (0.001, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5)
_lock = threading.Lock()
_collectors: dict[int, dict[str, object]] = {}


def _make(registry: CollectorRegistry) -> dict[str, object]:
    L = ["model"]
    r = registry
    return {
        "ttft": Histogram(
            "workbench_time_to_first_token_seconds",
            "Time to first token (queue time included).",
            L,
            buckets=_LAT,
            registry=r,
        ),
        "tpot": Histogram(
            "workbench_time_per_output_token_seconds",
            "Mean time per output token after the first, per request.",
            L,
            buckets=_TOK,
            registry=r,
        ),
        "itl": Histogram(
            "workbench_inter_token_latency_seconds",
            "Time between consecutive output tokens.",
            L,
            buckets=_TOK,
            registry=r,
        ),
        "e2e": Histogram(
            "workbench_e2e_request_latency_seconds", "Arrival to finish, per request.", L, buckets=_LAT, registry=r
        ),
        "queue": Histogram(
            "workbench_request_queue_time_seconds",
            "Arrival to first scheduled, per request.",
            L,
            buckets=_LAT,
            registry=r,
        ),
        "prompt": Counter("workbench_prompt_tokens", "Prompt tokens of admitted requests.", L, registry=r),
        "iter": Histogram(
            "workbench_iteration_tokens",
            "Tokens scheduled per engine step (prefill + decode; vLLM: iteration_tokens_total).",
            L,
            buckets=(1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192),
            registry=r,
        ),
        "gen": Counter("workbench_generation_tokens", "Generated tokens.", L, registry=r),
        "success": Counter(
            "workbench_request_success", "Finished requests by finish reason.", L + ["finished_reason"], registry=r
        ),
        "running": Gauge(
            "workbench_num_requests_running",
            "Requests in the running queue.",
            L,
            registry=r,
            multiprocess_mode="livesum",
        ),
        "waiting": Gauge(
            "workbench_num_requests_waiting",
            "Requests in the waiting queue.",
            L,
            registry=r,
            multiprocess_mode="livesum",
        ),
        "kv": Gauge(
            "workbench_kv_cache_usage_perc",
            "Fraction of KV-cache blocks in use (0-1).",
            L,
            registry=r,
            multiprocess_mode="livemax",
        ),
        "preempt": Counter("workbench_num_preemptions", "Sequences preempted (recomputed later).", L, registry=r),
        "pq": Counter("workbench_prefix_cache_queries", "Prompt tokens looked up in the prefix cache.", L, registry=r),
        "ph": Counter("workbench_prefix_cache_hits", "Prompt tokens found in the prefix cache.", L, registry=r),
        "prate": Gauge(
            "workbench_prefix_cache_hit_rate",
            "Prefix-cache hits / queries since start (tokens).",
            L,
            registry=r,
            multiprocess_mode="livemax",
        ),
    }


class EngineMetrics:
    """Updates the Prometheus collectors from each step's `StepOutput`.

    registry: where to register (default: `neural.METRICS_REGISTRY`, which front ends expose at
    `/metrics`). model_name: the `model` label value.
    """

    def __init__(self, model_name: str, registry: CollectorRegistry | None = None) -> None:
        registry = registry if registry is not None else METRICS_REGISTRY
        with _lock:
            c = _collectors.get(id(registry))
            if c is None:
                c = _collectors[id(registry)] = _make(registry)
        self.model_name = model_name
        self.registry = registry
        self._c = {k: (v.labels(model_name) if k != "success" else v) for k, v in c.items()}
        for reason in ("stop", "length", "abort"):  # series exist from start-up (vLLM's finished_reason values)
            c["success"].labels(model_name, reason)
        self._queries = 0
        self._hits = 0

    def admitted(self, num_prompt_tokens: int) -> None:
        """Count an admitted request's prompt tokens (every admitted request, finished or not)."""
        self._c["prompt"].inc(num_prompt_tokens)

    def aborted(self, num_running: int, num_waiting: int, kv_cache_usage: float) -> None:
        """An aborted request: counted as finished_reason="abort"; the gauges are set to the engine's
        state after the abort, so they are right even if no step follows (an idle engine)."""
        self._c["success"].labels(self.model_name, "abort").inc()
        self.gauges(num_running, num_waiting, kv_cache_usage)

    def gauges(self, num_running: int, num_waiting: int, kv_cache_usage: float) -> None:
        """Set the running / waiting / KV-usage gauges."""
        self._c["running"].set(num_running)
        self._c["waiting"].set(num_waiting)
        self._c["kv"].set(kv_cache_usage)

    def observe(self, step: StepOutput) -> None:
        """Fold one step into the metrics."""
        c = self._c
        for t in step.first_token_latencies:
            c["ttft"].observe(t)
        for t in step.inter_token_latencies:
            c["itl"].observe(t)
        c["gen"].inc(step.num_generated)
        for f in step.finished:
            c["e2e"].observe(f.e2e_latency)
            if f.queue_time is not None:
                c["queue"].observe(f.queue_time)
            if f.inter_token_latencies:
                c["tpot"].observe(sum(f.inter_token_latencies) / len(f.inter_token_latencies))
            c["success"].labels(self.model_name, f.finish_reason).inc()
        if step.num_prefill_tokens or step.num_decode_tokens:
            c["iter"].observe(step.num_prefill_tokens + step.num_decode_tokens)
        c["running"].set(step.num_running)
        c["waiting"].set(step.num_waiting)
        c["kv"].set(step.kv_cache_usage)
        if step.num_preempted:
            c["preempt"].inc(step.num_preempted)
        if step.prefix_cache_queries:
            c["pq"].inc(step.prefix_cache_queries)
            c["ph"].inc(step.prefix_cache_hits)
            self._queries += step.prefix_cache_queries
            self._hits += step.prefix_cache_hits
            c["prate"].set(self._hits / self._queries)
