"""Prometheus metrics of pipelines, on the same registry as the neural runtime's
(`neural.metrics.METRICS_REGISTRY`), so one `/metrics` shows both."""

from __future__ import annotations

from typing import Any

from prometheus_client import Counter, Histogram

from neural.metrics import METRICS_REGISTRY

_CHILDREN: dict[tuple[int, tuple[str, ...]], Any] = {}


def child(metric: Any, *labels: str) -> Any:
    """`metric.labels(*labels)`, looked up once per metric and label values (prometheus-client's
    `labels` takes a lock and builds the key on every call; a run made ~10 such calls). A child stays
    the live one as long as its series is removed only through `remove`. `metric` must live as long as
    the process (module-level metrics): the cache keys it by `id`."""
    key = (id(metric), labels)
    c = _CHILDREN.get(key)
    if c is None:
        if len(_CHILDREN) > 10_000:  # bounded: pipeline names come from requests
            _CHILDREN.clear()
        c = _CHILDREN[key] = metric.labels(*labels)
    return c


def remove(metric: Any, *labels: str) -> None:
    """`metric.remove(*labels)` (its series goes from `/metrics`) and the cached child with it, so a
    later `child` makes a new, exported one. No error when the series does not exist."""
    _CHILDREN.pop((id(metric), labels), None)
    try:
        metric.remove(*labels)
    except KeyError:
        pass


_BUCKETS = (0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0)

RUNS = Counter(
    "workbench_pipeline_runs",
    "Pipeline runs, by pipeline and status.",
    ["pipeline", "status"],
    registry=METRICS_REGISTRY,
)
RUN_LATENCY = Histogram(
    "workbench_pipeline_run_seconds",
    "Pipeline run latency (seconds), recording included.",
    ["pipeline"],
    buckets=_BUCKETS,
    registry=METRICS_REGISTRY,
)
NODE_LATENCY = Histogram(
    "workbench_pipeline_node_seconds",
    "Node execution time (seconds).",
    ["pipeline", "type"],
    buckets=_BUCKETS,
    registry=METRICS_REGISTRY,
)
CACHE_HITS = Counter(
    "workbench_pipeline_cache_hits", "Runs answered from the result cache.", ["pipeline"], registry=METRICS_REGISTRY
)
GATE_SKIPS = Counter(
    "workbench_pipeline_model_calls_skipped",
    "Model nodes skipped by gate decisions.",
    ["pipeline", "model"],
    registry=METRICS_REGISTRY,
)
RULE_FIRINGS = Counter(
    "workbench_pipeline_rule_firings", "Rule firings inside pipeline runs.", ["pipeline"], registry=METRICS_REGISTRY
)
RECORD_FAILURES = Counter(
    "workbench_pipeline_record_failures",
    "Runs whose record could not be written to the store (logged).",
    registry=METRICS_REGISTRY,
)
