"""Prometheus metrics of the neural runtime, per model: labels `model` and `version` (the model's
short version, the first 12 hex digits of its content hash, as `/v2/models/{m}` reports it),
Triton's `model` / `version` pair, on every series from the model's load.

Multiprocess (`workbench serve --workers N`): when `PROMETHEUS_MULTIPROC_DIR` is set before
prometheus_client is imported, values live in files shared by the workers and `/metrics` of any
worker reports the whole server (`multiprocess_text`); gauges say how workers combine
(`livesum` for queue lengths, `livemax` for limits and fractions).

All metrics live on one `CollectorRegistry` (`METRICS_REGISTRY`) that front ends expose at
`/metrics`, e.g. `prometheus_client.generate_latest(neural.METRICS_REGISTRY)`. The generation
engine may register its own collectors on the same registry.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

METRICS_REGISTRY = CollectorRegistry(auto_describe=True)

_PREFIX = "workbench_model"
# Latency buckets in seconds: 0.5 ms to 30 s, roughly x2 apart.
_TIME_BUCKETS = (0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0)
_BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256)


@dataclass(slots=True)
class _Families:
    requests: Counter
    failures: Counter
    batch_size: Histogram
    queue_time: Histogram
    compute_time: Histogram
    latency: Histogram
    queue_size: Gauge


_families: dict[int, _Families] = {}


def _families_for(registry: CollectorRegistry) -> _Families:
    fam = _families.get(id(registry))
    if fam is None:
        fam = _Families(
            requests=Counter(
                f"{_PREFIX}_requests",
                "Inference requests admitted by the model's batcher.",
                ["model", "version"],
                registry=registry,
            ),
            failures=Counter(
                f"{_PREFIX}_failures",
                "Requests that ended in an error, by reason (model_error, timeout, cancelled, rejected_queue_full, "
                "invalid_input).",
                ["model", "version", "reason"],
                registry=registry,
            ),
            batch_size=Histogram(
                f"{_PREFIX}_batch_size",
                "Requests per executed batch.",
                ["model", "version"],
                buckets=_BATCH_BUCKETS,
                registry=registry,
            ),
            queue_time=Histogram(
                f"{_PREFIX}_queue_time_seconds",
                "Time a request waited in the queue before its batch started.",
                ["model", "version"],
                buckets=_TIME_BUCKETS,
                registry=registry,
            ),
            compute_time=Histogram(
                f"{_PREFIX}_compute_time_seconds",
                "Time to run one batch on the model (pre/post-processing included).",
                ["model", "version"],
                buckets=_TIME_BUCKETS,
                registry=registry,
            ),
            latency=Histogram(
                f"{_PREFIX}_request_latency_seconds",
                "Request latency from admission to result (successful requests).",
                ["model", "version"],
                buckets=_TIME_BUCKETS,
                registry=registry,
            ),
            queue_size=Gauge(
                f"{_PREFIX}_queue_size",
                "Requests admitted and waiting for a batch (Triton: nv_inference_pending_request_count).",
                ["model", "version"],
                registry=registry,
                multiprocess_mode="livesum",
            ),
        )
        _families[id(registry)] = fam
    return fam


class ModelMetrics:
    """The metric children of one model; cheap to call from the batcher's worker thread."""

    def __init__(self, model: str, version: str = "", registry: CollectorRegistry | None = None) -> None:
        """`model`: the served name; `version`: the model's short version (label `version`, "" if unknown)."""
        self.model = model
        self.version = version
        fam = _families_for(registry or METRICS_REGISTRY)
        self._fam = fam
        lv = {"model": model, "version": version}
        self.requests = fam.requests.labels(**lv)
        self.batch_size = fam.batch_size.labels(**lv)
        self.queue_time = fam.queue_time.labels(**lv)
        self.compute_time = fam.compute_time.labels(**lv)
        self.latency = fam.latency.labels(**lv)
        self.queue_size = fam.queue_size.labels(**lv)
        for reason in ("model_error", "timeout", "cancelled", "rejected_queue_full"):  # series from start-up
            fam.failures.labels(model=model, version=version, reason=reason)

    def failure(self, reason: str, n: int = 1) -> None:
        """Count `n` failed requests with `reason`."""
        self._fam.failures.labels(model=self.model, version=self.version, reason=reason).inc(n)


def multiprocess_dir() -> str | None:
    """The folder of multiprocess metric files when this process writes them (else None)."""
    from prometheus_client import values

    if values.ValueClass is values.MutexValue:
        return None
    return os.environ.get("PROMETHEUS_MULTIPROC_DIR") or os.environ.get("prometheus_multiproc_dir")


def multiprocess_text() -> str:
    """Prometheus text of every metric of every worker process (MultiProcessCollector over
    `multiprocess_dir()`). Raises ValueError when multiprocess mode is off."""
    from prometheus_client import generate_latest
    from prometheus_client.multiprocess import MultiProcessCollector

    path = multiprocess_dir()
    if path is None:
        raise ValueError("prometheus multiprocess mode is off (PROMETHEUS_MULTIPROC_DIR was not set at import)")
    registry = CollectorRegistry()
    MultiProcessCollector(registry, path=path)
    return generate_latest(registry).decode()
