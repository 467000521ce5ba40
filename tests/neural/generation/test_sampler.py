"""Sampling: top-k / top-p masks, temperature, per-request seeds."""

from __future__ import annotations

import math

import torch

from neural.generation.sampler import Sampler, apply_top_k_top_p
from neural.generation.sampling_params import SamplingParams
from neural.generation.sequence import Sequence


def test_top_k_and_top_p_masks():
    logits = torch.log(torch.tensor([0.5, 0.2, 0.15, 0.1, 0.05]))
    kept = lambda x: torch.isfinite(x).nonzero().flatten().tolist()  # noqa: E731
    assert kept(apply_top_k_top_p(logits, 2, 1.0)) == [0, 1]
    assert kept(apply_top_k_top_p(logits, 0, 0.6)) == [0, 1]  # 0.5 < 0.6, 0.5 + 0.2 >= 0.6
    assert kept(apply_top_k_top_p(logits, 0, 0.5)) == [0]
    assert kept(apply_top_k_top_p(logits, 0, 0.01)) == [0]  # the top token always survives
    assert kept(apply_top_k_top_p(logits, 3, 0.95)) == [0, 1, 2]
    shuffled = logits[[3, 0, 4, 2, 1]]
    assert kept(apply_top_k_top_p(shuffled, 0, 0.6)) == [1, 4]


def _seq(seed, **kw):
    return Sequence("r", [1], SamplingParams(seed=seed, **kw), arrival=0.0)


def test_seeded_samples_are_reproducible_and_batch_independent():
    torch.manual_seed(0)
    logits = torch.randn(8, 50)
    sampler = Sampler()
    a = [_seq(42, temperature=1.0) for _ in range(1)]
    alone = [sampler.sample(a, logits[3:4])[0] for _ in range(20)]
    batch = [_seq(i, temperature=1.0) for i in range(8)]
    batch[3] = _seq(42, temperature=1.0)
    together = [sampler.sample(batch, logits)[3] for _ in range(20)]
    assert alone == together
    assert len(set(alone)) > 1  # it is sampling, not argmax


def test_greedy_and_sampling_distribution():
    probs = torch.tensor([0.6, 0.3, 0.1])
    logits = probs.log().unsqueeze(0)
    sampler = Sampler()
    assert sampler.sample([_seq(1, temperature=0.0)], logits) == [0]
    s = _seq(7, temperature=1.0)
    n = 3000
    counts = torch.bincount(torch.tensor([sampler.sample([s], logits)[0] for _ in range(n)]), minlength=3).float()
    # within 5 standard deviations of the expected counts
    for c, p in zip(counts.tolist(), probs.tolist()):
        assert abs(c - n * p) < 5 * math.sqrt(n * p * (1 - p))
    hot = _seq(7, temperature=0.25)  # low temperature sharpens towards the mode
    hot_counts = torch.bincount(torch.tensor([sampler.sample([hot], logits)[0] for _ in range(500)]), minlength=3)
    assert hot_counts[0] > 0.9 * 500
