"""Attention over the paged KV cache.

The cache of one layer is two tensors `[num_blocks, block_size, num_kv_heads, head_dim]`
(keys, values); the token of a sequence at position `p` lives in slot
`block_table[p // block_size] * block_size + p % block_size` of the flattened cache. Each
step first writes the new tokens' keys and values at their slots, then every query attends
to its sequence's blocks gathered from the cache (whole blocks: one index per block, not per
token):

* decode tokens (one query per sequence) are batched in groups of similar context length
  (sorted, at most `DECODE_GROUP` per group, so little is padded): a group's block tables are
  padded to `[B, max_blocks]`, their blocks gathered at once, and one SDPA call runs with a
  mask hiding the slots past each sequence's length. For
  grouped-query attention the query heads sharing a KV head are laid out as the query-length
  axis (`[B, kv_heads, group, head_dim]`), so no key/value copy per query head is made;
* prefill chunks (several queries of one sequence) run one SDPA call each, causal with the
  offset of the tokens already in the cache.

This is the CPU path (gather + `torch.nn.functional.scaled_dot_product_attention`); on a GPU
vLLM uses fused paged-attention kernels (FlashAttention / FlashInfer with block tables) that
read the blocks in place instead of gathering them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
import torch.nn.functional as F


@dataclass(slots=True)
class PrefillChunk:
    """One sequence's queries in a step with more than one new token.

    start: index of its first new token in the flat batch; num_new: new tokens;
    block_table: [blocks] int64 the sequence's blocks; context_len: its tokens up to the last
    new one; num_cached: tokens already in the cache before this step (causal offset).
    """

    start: int
    num_new: int
    block_table: torch.Tensor
    context_len: int
    num_cached: int


@dataclass(slots=True)
class DecodeGroup:
    """Single-query sequences attended together.

    index: [B] int64 positions in the flat batch; block_tables: [B, max_blocks] int64 (padding
    points at block 0); mask: [B, 1, 1, max_blocks * block_size] bool, True where attended.
    """

    index: torch.Tensor
    block_tables: torch.Tensor
    mask: torch.Tensor


@dataclass(slots=True)
class AttentionMetadata:
    """Per-step layout shared by all layers.

    slot_mapping: [T] int64 cache slot of each new token.
    decodes: the single-query sequences, in groups.
    prefills: the multi-query chunks.
    """

    slot_mapping: torch.Tensor
    decodes: list[DecodeGroup] = field(default_factory=list)
    prefills: list[PrefillChunk] = field(default_factory=list)


def write_kv(
    k_cache: torch.Tensor, v_cache: torch.Tensor, k: torch.Tensor, v: torch.Tensor, slots: torch.Tensor
) -> None:
    """Store new keys/values `[T, kv_heads, head_dim]` at flattened cache slots `slots` `[T]`."""
    KVH, D = k_cache.shape[2], k_cache.shape[3]
    k_cache.view(-1, KVH, D).index_copy_(0, slots, k)
    v_cache.view(-1, KVH, D).index_copy_(0, slots, v)


def paged_attention(
    q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor, meta: AttentionMetadata, scale: float
) -> torch.Tensor:
    """Attention of new queries over cached keys/values.

    q: [T, heads, head_dim]; k_cache, v_cache: [num_blocks, block_size, kv_heads, head_dim] (new
    tokens already written). Returns [T, heads, head_dim] in q's dtype.
    """
    T, H, D = q.shape
    bs, KVH = k_cache.shape[1], k_cache.shape[2]
    G = H // KVH
    out = torch.empty_like(q)
    for group in meta.decodes:
        B, nb = group.block_tables.shape
        L = nb * bs
        qd = q.index_select(0, group.index).view(B, KVH, G, D)
        flat = group.block_tables.reshape(-1)
        kd = k_cache.index_select(0, flat).view(B, L, KVH, D).transpose(1, 2)
        vd = v_cache.index_select(0, flat).view(B, L, KVH, D).transpose(1, 2)
        od = F.scaled_dot_product_attention(qd, kd, vd, attn_mask=group.mask, scale=scale)
        out.index_copy_(0, group.index, od.reshape(B, H, D))
    for chunk in meta.prefills:
        n, c = chunk.num_new, chunk.context_len
        qp = q[chunk.start : chunk.start + n].transpose(0, 1).unsqueeze(0)  # [1, H, n, D]
        kp = (
            k_cache.index_select(0, chunk.block_table).view(-1, KVH, D)[:c].transpose(0, 1).unsqueeze(0)
        )  # [1, KVH, c, D]
        vp = v_cache.index_select(0, chunk.block_table).view(-1, KVH, D)[:c].transpose(0, 1).unsqueeze(0)
        if chunk.num_cached == 0:
            op = F.scaled_dot_product_attention(qp, kp, vp, is_causal=True, scale=scale, enable_gqa=G > 1)
        else:
            mask = torch.ones(n, c, dtype=torch.bool, device=q.device).tril(diagonal=chunk.num_cached)
            op = F.scaled_dot_product_attention(qp, kp, vp, attn_mask=mask, scale=scale, enable_gqa=G > 1)
        out[chunk.start : chunk.start + n] = op[0].transpose(0, 1)
    return out
