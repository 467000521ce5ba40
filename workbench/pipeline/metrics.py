"""Prometheus metrics of pipelines, on the same registry as the neural runtime's
(`neural.metrics.METRICS_REGISTRY`), so one `/metrics` shows both."""

from __future__ import annotations

from prometheus_client import Counter, Histogram

from neural.metrics import METRICS_REGISTRY

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
