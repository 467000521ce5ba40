"""Prometheus metrics are derived from the steps' plain data."""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from neural.generation import EngineConfig, EngineMetrics, LLMEngine, SamplingParams


def test_metrics_follow_the_steps(llama_dir, make_prompts):
    registry = CollectorRegistry()
    metrics = EngineMetrics("tiny-llama", registry)
    engine = LLMEngine(
        llama_dir,
        EngineConfig(device="cpu", block_size=4, num_kv_blocks=40, max_num_batched_tokens=64, max_model_len=160),
        metrics=metrics,
    )
    shared = make_prompts(1, seed=31, lo=16, hi=16)[0]
    prompts = [shared + p for p in make_prompts(10, seed=32, lo=10, hi=30)]
    steps = []
    for i, p in enumerate(prompts):
        engine.add_request(str(i), p, SamplingParams(temperature=0, max_tokens=30, ignore_eos=True))
    while engine.has_unfinished_requests():
        steps.append(engine.step())
    get = lambda name, **labels: registry.get_sample_value(name, {"model": "tiny-llama", **labels})  # noqa: E731
    assert get("workbench_generation_tokens_total") == 300 == sum(s.num_generated for s in steps)
    assert get("workbench_prompt_tokens_total") == sum(len(p) for p in prompts)
    assert get("workbench_time_to_first_token_seconds_count") == 10
    assert get("workbench_e2e_request_latency_seconds_count") == 10
    assert get("workbench_request_queue_time_seconds_count") == 10
    assert get("workbench_time_per_output_token_seconds_count") == 10
    # 29 inter-token gaps per request, preemption recomputes included
    assert get("workbench_inter_token_latency_seconds_count") == 290
    assert get("workbench_request_success_total", finished_reason="length") == 10
    assert get("workbench_num_preemptions_total") == sum(s.num_preempted for s in steps) > 0
    hits, queries = get("workbench_prefix_cache_hits_total"), get("workbench_prefix_cache_queries_total")
    assert hits > 0 and queries >= sum(len(p) for p in prompts)
    assert get("workbench_prefix_cache_hit_rate") == hits / queries
    assert get("workbench_num_requests_running") == 0 and get("workbench_num_requests_waiting") == 0
    assert get("workbench_kv_cache_usage_perc") == 0.0
    assert max(s.kv_cache_usage for s in steps) > 0.5
    # a second engine on the same registry shares the collectors (no duplicate registration)
    EngineMetrics("other", registry)
