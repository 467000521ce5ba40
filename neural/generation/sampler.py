"""Sampler: greedy, temperature, top-k and top-p, each request with its own seeded generator.

Greedy rows are one batched argmax. Sampled rows are processed one by one with the request's
own `torch.Generator`, using the exponential-race form of categorical sampling
(`argmax(p / E)` with `E ~ Exp(1)` i.i.d., as vLLM's sampler does): every sampling step
draws exactly `vocab` numbers from that generator, so a request's samples depend only on
its seed and its own logits, never on which requests share the batch or on preemption.
"""

from __future__ import annotations

import torch

from .sequence import Sequence


def apply_top_k_top_p(logits: torch.Tensor, top_k: int, top_p: float) -> torch.Tensor:
    """Mask (to -inf) tokens outside the top-k and outside the top-p nucleus.

    logits: [vocab] float32. top_k <= 0 and top_p == 1.0 are no-ops. The most likely token is
    always kept. Ties at the k-th value are all kept.
    """
    if top_k > 0 and top_k < logits.shape[-1]:
        kth = torch.topk(logits, top_k).values[-1]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if top_p < 1.0:
        sorted_logits, order = torch.sort(logits, descending=True)
        probs = sorted_logits.softmax(-1)
        # drop a token when the mass strictly before it already reaches top_p
        drop_sorted = (probs.cumsum(-1) - probs) >= top_p
        drop_sorted[0] = False
        drop = torch.zeros_like(drop_sorted).scatter_(0, order, drop_sorted)
        logits = logits.masked_fill(drop, float("-inf"))
    return logits


class Sampler:
    """Chooses the next token of each sequence from its logits."""

    def sample(self, seqs: list[Sequence], logits: torch.Tensor) -> list[int]:
        """logits: [S, vocab] float32 (row i belongs to seqs[i]) -> S token ids."""
        out = [0] * len(seqs)
        greedy = [i for i, s in enumerate(seqs) if s.params.greedy]
        if greedy:
            ids = logits[greedy].argmax(dim=-1).tolist()
            for i, t in zip(greedy, ids):
                out[i] = t
        for i, seq in enumerate(seqs):
            p = seq.params
            if p.greedy:
                continue
            row = apply_top_k_top_p(logits[i] / p.temperature, p.top_k, p.top_p)
            probs = row.softmax(-1)
            race = torch.empty_like(probs).exponential_(1.0, generator=seq.generator)
            out[i] = int((probs / race).argmax())
        return out
