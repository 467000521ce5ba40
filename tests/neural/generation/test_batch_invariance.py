"""A request's output does not depend on its batch: alone, among 32 others, or after preemption."""

from __future__ import annotations

import pytest

from neural.generation import EngineConfig, LLMEngine, SamplingParams


def _generate(model_dir, prompts, params, **cfg):
    engine = LLMEngine(model_dir, EngineConfig(device="cpu", **cfg))
    return engine, engine.generate(prompts, params)


@pytest.mark.parametrize("sampling", ["greedy", "seeded"])
def test_alone_vs_batch_of_32_vs_preempted(llama_dir, make_prompts, sampling):
    prompts = make_prompts(32, seed=5, lo=4, hi=60)
    if sampling == "greedy":
        params = [SamplingParams(temperature=0, max_tokens=24, ignore_eos=True) for _ in prompts]
    else:
        params = [
            SamplingParams(temperature=0.9, top_k=50, top_p=0.95, seed=100 + i, max_tokens=24, ignore_eos=True)
            for i in range(len(prompts))
        ]
    target = 7
    _, [alone] = _generate(llama_dir, [prompts[target]], [params[target]], block_size=4)
    _, batch = _generate(llama_dir, prompts, params, block_size=4, max_num_seqs=32)
    # a KV cache far too small for 32 sequences: the scheduler must preempt and recompute
    engine, tight = _generate(
        llama_dir,
        prompts,
        params,
        block_size=4,
        max_num_seqs=32,
        num_kv_blocks=64,
        max_num_batched_tokens=96,
        max_model_len=256,
    )
    assert engine.scheduler.num_preemptions > 0
    assert sum(o.num_preemptions for o in tight) > 0
    assert batch[target].token_ids == alone.token_ids
    assert [o.token_ids for o in tight] == [o.token_ids for o in batch]
    assert [o.text for o in tight] == [o.text for o in batch]
    assert engine.num_used_blocks == 0  # everything finished and freed


def test_preempted_request_itself_matches_alone(llama_dir, make_prompts):
    prompts = make_prompts(12, seed=6, lo=20, hi=40)
    params = SamplingParams(temperature=0, max_tokens=30, ignore_eos=True)
    engine, tight = _generate(
        llama_dir,
        prompts,
        params,
        block_size=4,
        max_num_seqs=12,
        num_kv_blocks=40,
        max_num_batched_tokens=64,
        max_model_len=160,
    )
    preempted = [i for i, o in enumerate(tight) if o.num_preemptions > 0]
    assert preempted, "the small cache should force preemption"
    for i in preempted[:3]:
        _, [alone] = _generate(llama_dir, [prompts[i]], params, block_size=4)
        assert tight[i].token_ids == alone.token_ids


@pytest.mark.parametrize("block_size,budget,blocks,caching", [(2, 7, 70, True), (8, 33, 24, True), (4, 16, 48, False)])
def test_any_geometry_gives_the_same_tokens(llama_dir, make_prompts, block_size, budget, blocks, caching):
    """Shared prefixes, tiny token budgets (chunked prefill), caches that force preemption:
    the greedy outputs never change, and every block is returned at the end."""
    base = make_prompts(2, seed=40, lo=12, hi=20)
    prompts = [base[i % 2] + p for i, p in enumerate(make_prompts(16, seed=41, lo=1, hi=25))]
    params = SamplingParams(temperature=0, max_tokens=16, ignore_eos=True)
    _, ref = _generate(llama_dir, prompts, params, block_size=16, enable_prefix_caching=False)
    engine, outs = _generate(
        llama_dir,
        prompts,
        params,
        block_size=block_size,
        max_num_batched_tokens=budget,
        num_kv_blocks=blocks,
        max_num_seqs=16,
        max_model_len=64,
        enable_prefix_caching=caching,
    )
    assert [o.token_ids for o in outs] == [o.token_ids for o in ref]
    assert engine.num_used_blocks == 0 and all(rc == 0 for rc in engine.block_manager.ref_counts)
    assert engine.scheduler.num_preemptions > 0
    if caching:
        assert engine.block_manager.prefix_cache_hits > 0
