"""Block manager: free list, reference counts, block tables, prefix caching and its hit rate."""

from __future__ import annotations

import pytest

from neural.generation.block_manager import BlockManager
from neural.generation.sampling_params import SamplingParams
from neural.generation.sequence import Sequence


def seq(tokens, rid="r"):
    return Sequence(rid, list(tokens), SamplingParams(max_tokens=8), arrival=0.0)


def compute(bm: BlockManager, s: Sequence, n: int) -> None:
    """Pretend the model computed n more tokens of s."""
    s.num_computed_tokens += n
    bm.commit_computed(s)


def test_allocate_append_free_counts():
    bm = BlockManager(num_blocks=8, block_size=4)
    s = seq(range(1, 11))  # 10 tokens -> 3 blocks
    assert bm.allocate_waiting(s, 100) == 10
    assert len(s.block_table) == 3 and bm.num_used_blocks == 3 and bm.num_free_blocks == 5
    compute(bm, s, 10)
    s.token_ids += [11, 12]  # 12 tokens: still 3 blocks
    assert bm.append_slots(s, 1) and len(s.block_table) == 3
    compute(bm, s, 1)
    assert bm.append_slots(s, 1) and len(s.block_table) == 3
    compute(bm, s, 1)
    s.token_ids.append(13)  # 13th token needs a 4th block
    assert bm.append_slots(s, 1) and len(s.block_table) == 4
    bm.free(s)
    assert s.block_table == [] and bm.num_used_blocks == 0 and bm.num_free_blocks == 8
    assert all(rc == 0 for rc in bm.ref_counts)


def test_out_of_blocks_changes_nothing():
    bm = BlockManager(num_blocks=3, block_size=4)
    a = seq(range(1, 9), "a")
    assert bm.allocate_waiting(a, 100) == 8  # 2 blocks
    b = seq(range(20, 30), "b")  # needs 3 blocks, only 1 free
    assert bm.allocate_waiting(b, 100) is None
    assert b.block_table == [] and bm.num_free_blocks == 1
    # a chunk that fits is admitted: 4 tokens = 1 block
    assert bm.allocate_waiting(b, 4) == 4 and bm.num_free_blocks == 0
    compute(bm, a, 8)
    a.token_ids.append(9)
    assert not bm.append_slots(a, 1)  # would need a third block
    assert len(a.block_table) == 2


def test_prefix_sharing_refcounts_and_hit_rate():
    bm = BlockManager(num_blocks=10, block_size=4)
    prefix = list(range(100, 112))  # 3 full blocks
    a = seq(prefix + [1, 2], "a")
    bm.allocate_waiting(a, 100)
    compute(bm, a, len(a.token_ids))
    b = seq(prefix + [7, 8, 9], "b")
    assert bm.allocate_waiting(b, 100) == 3  # 12 cached tokens, 3 to compute
    assert b.num_computed_tokens == 12 and b.num_cached_tokens == 12
    assert b.block_table[:3] == a.block_table[:3]
    assert b.block_table[3] != a.block_table[3]
    assert [bm.ref_counts[x] for x in a.block_table[:3]] == [2, 2, 2]
    assert bm.num_used_blocks == 5  # 3 shared + one tail block each
    assert bm.prefix_cache_queries == 14 + 15 and bm.prefix_cache_hits == 12
    assert bm.hit_rate == pytest.approx(12 / 29)
    bm.free(a)
    assert [bm.ref_counts[x] for x in b.block_table[:3]] == [1, 1, 1]
    bm.free(b)
    assert bm.num_used_blocks == 0


def test_hash_chains_on_predecessor():
    bm = BlockManager(num_blocks=10, block_size=4)
    a = seq([1, 2, 3, 4, 5, 6, 7, 8, 9], "a")
    bm.allocate_waiting(a, 100)
    compute(bm, a, 9)
    # same second block, different first block: no hit at all
    b = seq([9, 9, 9, 9, 5, 6, 7, 8, 9], "b")
    assert bm.allocate_waiting(b, 100) == 9 and b.num_computed_tokens == 0


def test_last_token_is_always_computed():
    bm = BlockManager(num_blocks=10, block_size=4)
    a = seq(range(1, 9), "a")  # exactly 2 full blocks
    bm.allocate_waiting(a, 100)
    compute(bm, a, 8)
    b = seq(range(1, 9), "b")  # identical prompt: only the first block may hit
    assert bm.allocate_waiting(b, 100) == 4
    assert b.num_computed_tokens == 4


def test_freed_blocks_stay_cached_until_reused_lru():
    bm = BlockManager(num_blocks=4, block_size=2)
    a = seq([1, 2, 3, 4, 5], "a")  # 3 blocks
    bm.allocate_waiting(a, 100)
    compute(bm, a, 5)
    cached_blocks = a.block_table[:2]
    bm.free(a)
    assert bm.num_free_blocks == 4
    b = seq([1, 2, 3, 4, 9], "b")  # hits both cached (free) blocks: they come off the free list
    assert bm.allocate_waiting(b, 100) == 1
    assert b.block_table[:2] == cached_blocks and bm.num_free_blocks == 1
    bm.free(b)
    # fill the whole pool with other tokens: the old blocks are evicted and their hashes forgotten
    c = seq([50, 51, 52, 53, 54, 55, 56, 57], "c")
    bm.allocate_waiting(c, 100)
    compute(bm, c, 8)
    bm.free(c)
    d = seq([1, 2, 3, 4, 9], "d")
    assert bm.allocate_waiting(d, 100) == 5 and d.num_computed_tokens == 0


def test_prefix_caching_off():
    bm = BlockManager(num_blocks=10, block_size=4, enable_prefix_caching=False)
    a = seq(range(1, 10), "a")
    bm.allocate_waiting(a, 100)
    compute(bm, a, 9)
    b = seq(range(1, 10), "b")
    assert bm.allocate_waiting(b, 100) == 9
    assert bm.prefix_cache_queries == 0 and not bm.cached
