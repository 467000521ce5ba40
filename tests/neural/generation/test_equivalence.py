"""Our forward pass vs Hugging Face transformers on the same weights (greedy decoding).

Tolerance: logits agree to atol 2e-4, rtol 1e-4 in float32 (the bound leaves room for BLAS
kernels choosing other blockings for other batch shapes), and the greedy token ids are identical.
"""

from __future__ import annotations

import pytest
import torch
from transformers import AutoModelForCausalLM

from neural.generation import EngineConfig, LLMEngine, SamplingParams
from neural.generation.sampler import Sampler

ATOL, RTOL = 2e-4, 1e-4


class RecordingSampler(Sampler):
    """Greedy sampler that keeps each sequence's logits rows, step by step."""

    def __init__(self) -> None:
        self.logits: dict[str, list[torch.Tensor]] = {}

    def sample(self, seqs, logits):
        for seq, row in zip(seqs, logits):
            self.logits.setdefault(seq.request_id, []).append(row.clone())
        return super().sample(seqs, logits)


def _run(model_dir, prompts, max_tokens, **cfg):
    engine = LLMEngine(model_dir, EngineConfig(device="cpu", **cfg))
    rec = RecordingSampler()
    engine.sampler = rec
    for i, p in enumerate(prompts):
        engine.add_request(str(i), p, SamplingParams(temperature=0, max_tokens=max_tokens, ignore_eos=True))
    done = {}
    while engine.has_unfinished_requests():
        for o in engine.step().outputs:
            if o.finished:
                done[o.request_id] = o
    return (
        engine,
        [done[str(i)] for i in range(len(prompts))],
        [torch.stack(rec.logits[str(i)]) for i in range(len(prompts))],
    )


@pytest.mark.parametrize("fixture", ["llama_dir", "llama3_dir", "qwen2_dir", "gpt2_dir"])
def test_logits_and_greedy_tokens_match_transformers(fixture, request, make_prompts, hf_greedy):
    model_dir = request.getfixturevalue(fixture)
    hf = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()
    prompts = make_prompts(6, seed=3, lo=2, hi=45)
    # small block size and token budget: chunked prefill, several blocks per sequence, mixed steps
    _, outs, logits = _run(model_dir, prompts, max_tokens=12, block_size=4, max_num_batched_tokens=32, max_num_seqs=4)
    for prompt, out, ours in zip(prompts, outs, logits):
        assert out.token_ids == hf_greedy(hf, prompt, 12)
        with torch.no_grad():
            full = hf(torch.tensor([prompt + out.token_ids[:-1]])).logits[0, len(prompt) - 1 :]
        torch.testing.assert_close(ours, full.float(), atol=ATOL, rtol=RTOL)


def test_prefix_cache_hits_do_not_change_logits(llama_dir, make_prompts):
    shared = make_prompts(1, seed=9, lo=40, hi=40)[0]
    prompts = [shared + tail for tail in make_prompts(4, seed=10, lo=1, hi=9)]
    engine, outs_cached, logits_cached = _run(
        llama_dir, prompts, 6, block_size=8, enable_prefix_caching=True, max_num_seqs=1
    )
    assert engine.block_manager.prefix_cache_hits >= 3 * 40 // 8 * 8  # later requests reuse the 5 shared blocks
    _, outs_plain, logits_plain = _run(llama_dir, prompts, 6, block_size=8, enable_prefix_caching=False, max_num_seqs=1)
    for a, b, la, lb in zip(outs_cached, outs_plain, logits_cached, logits_plain):
        assert a.token_ids == b.token_ids
        torch.testing.assert_close(la, lb, atol=ATOL, rtol=RTOL)
