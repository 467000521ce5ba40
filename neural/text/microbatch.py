"""Split a batch into micro-batches of similar length when padding costs more than a model call.

On a CPU a transformer's cost is about `a + c * batch * padded_length` (a: per-call overhead,
c: per token), so one batch mixing 5- and 100-token texts wastes most of its work on padding.
With costs in token units (`overhead_tokens` = a / c), the cheapest split of length-sorted items
into contiguous groups is found exactly by dynamic programming in O(n^2) (n <= max_batch_size).
"""

from __future__ import annotations


def plan_micro_batches(lengths: list[int], overhead_tokens: float) -> list[list[int]]:
    """Indices of `lengths` grouped into micro-batches minimising sum(overhead_tokens + size * max_length).

    Groups are returned shortest first; every index appears exactly once. `overhead_tokens <= 0`
    gives one group per distinct cost-free split (effectively by length); a huge value gives one group.
    """
    n = len(lengths)
    if n == 0:
        return []
    if n == 1:
        return [[0]]
    order = sorted(range(n), key=lambda i: lengths[i])
    sorted_len = [lengths[i] for i in order]
    best = [0.0] + [float("inf")] * n
    cut = [0] * (n + 1)
    for j in range(1, n + 1):
        longest = sorted_len[j - 1]
        for i in range(j):
            cost = best[i] + overhead_tokens + (j - i) * longest
            if cost < best[j]:
                best[j], cut[j] = cost, i
    groups: list[list[int]] = []
    j = n
    while j > 0:
        groups.append(order[cut[j] : j])
        j = cut[j]
    return groups[::-1]
