"""KV-cache block manager: free list, reference counts, block tables and prefix caching.

The KV cache is a fixed pool of `num_blocks` blocks of `block_size` token slots (one
preallocated tensor per layer, see `kv_cache.py`). A sequence owns a block table: the ids of
the blocks holding its tokens in order. Memory is reserved one block at a time as a sequence
grows, so at most `block_size - 1` slots per sequence are reserved but unused.

Prefix caching (vLLM's automatic prefix caching, after the design of vLLM v1's
`KVCacheManager`): when a block becomes full, its hash is computed from its predecessor's hash
and its own token ids, and the block is entered in a hash table. A new sequence whose leading
full blocks have the same hashes shares those blocks (reference count + 1) and skips their
prefill. A block whose reference count drops to zero goes to the tail of the free list but
keeps its contents and hash until it is handed out again (least recently freed first), so a
later request can still hit it.
"""

from __future__ import annotations

from collections import OrderedDict

from .sequence import Sequence


class NoFreeBlocksError(RuntimeError):
    """Raised when a block is requested from an empty free list (the scheduler checks first)."""


class BlockManager:
    """Allocates KV-cache blocks to sequences.

    Counters (tokens, cumulative): `prefix_cache_queries` (prompt tokens looked up),
    `prefix_cache_hits` (of those, tokens found in cached blocks).
    """

    def __init__(self, num_blocks: int, block_size: int, enable_prefix_caching: bool = True) -> None:
        if num_blocks < 1 or block_size < 1:
            raise ValueError(f"BlockManager needs num_blocks >= 1 and block_size >= 1, got {num_blocks}, {block_size}")
        self.num_blocks = num_blocks
        self.block_size = block_size
        self.enable_prefix_caching = enable_prefix_caching
        self.ref_counts = [0] * num_blocks
        self.block_hashes: list[int | None] = [None] * num_blocks
        self.block_tokens: list[tuple[int, ...] | None] = [None] * num_blocks
        self.free_blocks: OrderedDict[int, None] = OrderedDict((i, None) for i in range(num_blocks))
        self.cached: dict[int, int] = {}  # block hash -> block id
        self.prefix_cache_queries = 0
        self.prefix_cache_hits = 0

    # ---- counts -------------------------------------------------------------------------
    @property
    def num_free_blocks(self) -> int:
        """Blocks with reference count 0 (cached-but-unreferenced blocks count as free)."""
        return len(self.free_blocks)

    @property
    def num_used_blocks(self) -> int:
        """Blocks referenced by at least one sequence."""
        return self.num_blocks - len(self.free_blocks)

    @property
    def usage(self) -> float:
        """Fraction of blocks in use, in [0, 1] (vLLM's kv_cache_usage_perc)."""
        return self.num_used_blocks / self.num_blocks

    @property
    def hit_rate(self) -> float:
        """Prefix-cache hits / queries in tokens since start (0.0 before any query)."""
        return self.prefix_cache_hits / self.prefix_cache_queries if self.prefix_cache_queries else 0.0

    def blocks_needed(self, seq: Sequence, num_tokens: int) -> int:
        """Blocks `seq` must add to its table to hold its first `num_tokens` tokens."""
        return max(0, -(-num_tokens // self.block_size) - len(seq.block_table))

    # ---- prefix cache -------------------------------------------------------------------
    @staticmethod
    def chain_hash(prev_hash: int | None, tokens: tuple[int, ...]) -> int:
        """Hash of a full block: its predecessor's hash (None for the first block) with its token ids."""
        return hash((prev_hash, tokens))

    def find_cached_prefix(self, seq: Sequence) -> list[int]:
        """Ids of cached blocks equal to `seq`'s leading full blocks (no references taken).

        At most `len(seq) - 1` tokens are matched: the last token is always computed, because
        its logits are needed to sample the next one.
        """
        if not self.enable_prefix_caching:
            return []
        bs = self.block_size
        hits: list[int] = []
        prev: int | None = None
        for i in range((len(seq.token_ids) - 1) // bs):
            tokens = tuple(seq.token_ids[i * bs : (i + 1) * bs])
            h = self.chain_hash(prev, tokens)
            block = self.cached.get(h)
            if block is None or self.block_tokens[block] != tokens:
                break
            hits.append(block)
            prev = h
        return hits

    # ---- allocation ---------------------------------------------------------------------
    def _take_free_block(self) -> int:
        if not self.free_blocks:
            raise NoFreeBlocksError("no free KV-cache blocks")
        block, _ = self.free_blocks.popitem(last=False)
        old = self.block_hashes[block]
        if old is not None:  # evict: the block's old contents are about to be overwritten
            if self.cached.get(old) == block:
                del self.cached[old]
            self.block_hashes[block] = None
            self.block_tokens[block] = None
        self.ref_counts[block] = 1
        return block

    def allocate_waiting(self, seq: Sequence, num_new_tokens_max: int) -> int | None:
        """Give a waiting `seq` its cached prefix blocks plus fresh blocks for new tokens.

        Returns the number of tokens to compute this step (`<= num_new_tokens_max`, at least 1)
        and sets `seq.num_computed_tokens` to the cached prefix length; returns None (and
        changes nothing) when the free list cannot cover them.
        """
        hits = self.find_cached_prefix(seq)
        num_cached = len(hits) * self.block_size
        num_new = min(num_new_tokens_max, len(seq.token_ids) - num_cached)
        if num_new < 1:
            return None
        # blocks among the hits currently free are taken off the free list too
        revived = sum(1 for b in hits if self.ref_counts[b] == 0)
        fresh = -(-(num_cached + num_new) // self.block_size) - len(hits)
        if revived + fresh > len(self.free_blocks):
            return None
        for b in hits:
            if self.ref_counts[b] == 0:
                del self.free_blocks[b]
            self.ref_counts[b] += 1
        seq.block_table = list(hits)
        for _ in range(fresh):
            seq.block_table.append(self._take_free_block())
        seq.num_computed_tokens = num_cached
        if seq.num_preemptions == 0:
            seq.num_cached_tokens = num_cached
        if self.enable_prefix_caching:
            self.prefix_cache_queries += len(seq.token_ids)
            self.prefix_cache_hits += num_cached
        return num_new

    def append_slots(self, seq: Sequence, num_new_tokens: int) -> bool:
        """Extend a running `seq`'s table to hold `num_new_tokens` more tokens; False if out of blocks."""
        need = self.blocks_needed(seq, seq.num_computed_tokens + num_new_tokens)
        if need > len(self.free_blocks):
            return False
        for _ in range(need):
            seq.block_table.append(self._take_free_block())
        return True

    def commit_computed(self, seq: Sequence) -> None:
        """Hash and cache `seq`'s blocks that became full with its computed tokens."""
        if not self.enable_prefix_caching:
            return
        bs = self.block_size
        n_full = seq.num_computed_tokens // bs
        # walk back to the first full block without a hash; earlier ones are committed
        i = n_full
        while i > 0 and self.block_hashes[seq.block_table[i - 1]] is None:
            i -= 1
        prev = self.block_hashes[seq.block_table[i - 1]] if i > 0 else None
        for j in range(i, n_full):
            block = seq.block_table[j]
            tokens = tuple(seq.token_ids[j * bs : (j + 1) * bs])
            h = self.chain_hash(prev, tokens)
            self.block_hashes[block] = h
            self.block_tokens[block] = tokens
            self.cached.setdefault(h, block)  # an identical block computed earlier stays the cached one
            prev = h

    def free(self, seq: Sequence) -> None:
        """Drop `seq`'s references; blocks reaching zero go to the free list tail, last block first."""
        for block in reversed(seq.block_table):
            self.ref_counts[block] -= 1
            if self.ref_counts[block] == 0:
                self.free_blocks[block] = None
        seq.block_table = []
        seq.num_computed_tokens = 0

    def reset_prefix_cache(self) -> None:
        """Forget every cached hash (blocks in use keep their contents)."""
        self.cached.clear()
        for b in range(self.num_blocks):
            self.block_hashes[b] = None
            self.block_tokens[b] = None
