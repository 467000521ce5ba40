"""Per-model counters from Prometheus metric families, for the Models screen's rates.

The same reading for both backends: the in-process registry's `collect()` and a server's `/metrics`
text parsed by `prometheus_client.parser.text_string_to_metric_families`.
"""

from __future__ import annotations

from typing import Any

JSON = dict[str, Any]

#: metric sample name -> counter key (the generation engine's names follow vLLM's)
WANTED = {
    "workbench_model_requests_total": "requests",
    "workbench_model_request_latency_seconds_sum": "latency_sum_s",
    "workbench_model_request_latency_seconds_count": "latency_count",
    "workbench_model_batch_size_sum": "batch_sum",
    "workbench_model_batch_size_count": "batch_count",
    "workbench_kv_cache_usage_perc": "kv_cache_usage",
    "workbench_request_success_total": "requests",
    "workbench_e2e_request_latency_seconds_sum": "latency_sum_s",
    "workbench_e2e_request_latency_seconds_count": "latency_count",
    "workbench_generation_tokens_total": "generation_tokens",
    "workbench_num_requests_running": "running",
}


def empty_sample() -> JSON:
    """The counters of a model that has served nothing yet."""
    return {
        "requests": 0.0,
        "latency_sum_s": 0.0,
        "latency_count": 0.0,
        "batch_sum": 0.0,
        "batch_count": 0.0,
        "kv_cache_usage": None,
    }


def metric_samples(families: Any) -> dict[str, JSON]:
    """`{model: {"requests", "latency_sum_s", "latency_count", "batch_sum", "batch_count",
    "kv_cache_usage" (0..1 or None)}}` plus `"generation_tokens"` and `"running"` for generative
    models; cumulative values as sampled now."""
    out: dict[str, JSON] = {}
    for family in families:
        for sample in family.samples:
            key = WANTED.get(sample.name)
            model = sample.labels.get("model")
            if key is None or not model:
                continue
            row = out.setdefault(model, empty_sample())
            if sample.name == "workbench_request_success_total":  # one series per finish reason
                row[key] += float(sample.value)
            else:
                row[key] = float(sample.value)
    return out
