"""The admission queue's gauges through their cached children (`workbench.pipeline.metrics.child`):
a key whose series were removed gets exported series again when it is admitted again."""

from __future__ import annotations

from neural.metrics import METRICS_REGISTRY
from workbench.serving.admission import AdmissionQueue


def _value(name: str, key: str) -> float | None:
    return METRICS_REGISTRY.get_sample_value(name, {"pipeline": key})


def test_series_come_back_after_a_discard_removed_them():
    q = AdmissionQueue(5)
    key = "p14-admission-metrics"
    t = q.admit(key)
    assert _value("workbench_pipeline_requests_admitted", key) == 1
    assert _value("workbench_pipeline_admission_limit", key) == 5
    q.discard(t)  # nothing admitted, no answer: the key's series go
    assert _value("workbench_pipeline_requests_admitted", key) is None
    assert _value("workbench_pipeline_admission_limit", key) is None
    t = q.admit(key, 2)
    assert _value("workbench_pipeline_requests_admitted", key) == 2
    assert _value("workbench_pipeline_admission_limit", key) == 5
    q.discard(t)


def test_every_queue_sets_its_limit_on_each_admit():
    key = "p14-admission-limit"
    a, b = AdmissionQueue(7), AdmissionQueue(3)
    ta = a.admit(key)
    tb = b.admit(key)
    assert _value("workbench_pipeline_admission_limit", key) == 3
    ta2 = a.admit(key)
    assert _value("workbench_pipeline_admission_limit", key) == 7
    for q, t in ((a, ta), (a, ta2), (b, tb)):
        q.discard(t)
