"""Model runner: owns the model and the preallocated KV cache, turns a schedule into one forward pass."""

from __future__ import annotations

from pathlib import Path

import torch

from .attention import AttentionMetadata, DecodeGroup, PrefillChunk
from .model_config import ModelSpec
from .models import build_model
from .sequence import Sequence

DECODE_GROUP = 8  # most decoding sequences per attention call (sorted by length: little padding)
_DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


class ModelRunner:
    """Runs our forward pass for a batch of `(sequence, num_new_tokens)` pairs.

    The KV cache is one pair of tensors per layer, `[num_blocks, block_size, kv_heads, head_dim]`,
    allocated once here (vLLM preallocates the same way; nothing is allocated per request).
    """

    def __init__(
        self, spec: ModelSpec, model_dir: str | Path, num_blocks: int, block_size: int, dtype: str, device: str
    ) -> None:
        if dtype in ("float16", "bfloat16") and not device.startswith("cuda"):
            raise ValueError(f"dtype {dtype} needs a CUDA device (got {device}); use float32 on CPU")
        self.spec = spec
        self.device = device
        self.dtype = _DTYPES[dtype]
        self.block_size = block_size
        self.num_blocks = num_blocks
        self.model = build_model(spec, model_dir, self.dtype, device)
        shape = (num_blocks, block_size, spec.num_kv_heads, spec.head_dim)
        self.kv_caches = [
            (torch.zeros(shape, dtype=self.dtype, device=device), torch.zeros(shape, dtype=self.dtype, device=device))
            for _ in range(spec.num_layers)
        ]

    @property
    def kv_cache_bytes(self) -> int:
        """Bytes of the whole preallocated KV cache (all layers, keys and values)."""
        return sum(k.numel() * k.element_size() + v.numel() * v.element_size() for k, v in self.kv_caches)

    @property
    def kv_bytes_per_block(self) -> int:
        return self.kv_cache_bytes // self.num_blocks

    @staticmethod
    def _block_tables(tables: list[list[int]]) -> torch.Tensor:
        """Block tables padded with block 0 to `[B, max blocks]` int64."""
        nb = max(len(t) for t in tables)
        return torch.tensor([t + [0] * (nb - len(t)) for t in tables], dtype=torch.long)

    @torch.inference_mode()
    def execute(self, scheduled: list[tuple[Sequence, int]]) -> tuple[list[Sequence], torch.Tensor]:
        """Compute the scheduled tokens; write their keys/values into the cache.

        Returns the sequences whose last token was computed this step (they sample a next token)
        and their logits `[S, vocab]` float32 on the CPU, in the same order.
        """
        input_ids: list[int] = []
        positions: list[int] = []
        slot_mapping: list[int] = []
        decode_rows: list[int] = []
        decode_tables: list[list[int]] = []
        decode_lens: list[int] = []
        bs = self.block_size
        prefills: list[PrefillChunk] = []
        sample_rows: list[int] = []
        sample_seqs: list[Sequence] = []
        for seq, n in scheduled:
            start = seq.num_computed_tokens
            end = start + n
            row = len(input_ids)
            input_ids.extend(seq.token_ids[start:end])
            positions.extend(range(start, end))
            table = seq.block_table
            slot_mapping.extend(table[p // bs] * bs + p % bs for p in range(start, end))
            if n == 1:
                decode_rows.append(row)
                decode_tables.append(table)
                decode_lens.append(end)
            else:
                blocks = torch.tensor(table[: -(-end // bs)], dtype=torch.long, device=self.device)
                prefills.append(PrefillChunk(row, n, blocks, end, start))
            if end == len(seq.token_ids):
                sample_rows.append(row + n - 1)
                sample_seqs.append(seq)
        dev = self.device
        meta = AttentionMetadata(
            slot_mapping=torch.tensor(slot_mapping, dtype=torch.long, device=dev), prefills=prefills
        )
        order = sorted(range(len(decode_rows)), key=decode_lens.__getitem__)
        for g in range(0, len(order), DECODE_GROUP):
            members = order[g : g + DECODE_GROUP]
            B = len(members)
            tables = self._block_tables([decode_tables[i] for i in members])  # padding reads block 0; masked
            L = tables.shape[1] * bs
            mask = torch.arange(L)[None, :] < torch.tensor([decode_lens[i] for i in members])[:, None]
            meta.decodes.append(
                DecodeGroup(
                    torch.tensor([decode_rows[i] for i in members], dtype=torch.long, device=dev),
                    tables.to(dev),
                    mask.view(B, 1, 1, L).to(dev),
                )
            )
        ids = torch.tensor(input_ids, dtype=torch.long, device=dev)
        pos = torch.tensor(positions, dtype=torch.long, device=dev)
        hidden = self.model.forward(ids, pos, meta, self.kv_caches)
        if not sample_rows:
            return [], torch.empty(0, self.spec.vocab_size)
        logits = self.model.compute_logits(hidden[torch.tensor(sample_rows, device=dev)])
        return sample_seqs, logits.cpu()
