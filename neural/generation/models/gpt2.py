"""GPT-2 forward pass over the paged KV cache.

Learned absolute positions, pre-LayerNorm blocks, fused c_attn projection, GELU (tanh
approximation, transformers' "gelu_new"), final LayerNorm, LM head tied to the token
embedding. GPT-2 checkpoints store Conv1D weights as [in, out]; they are transposed once at
load so every projection is an `F.linear`.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ..attention import AttentionMetadata, paged_attention, write_kv
from ..model_config import ModelSpec
from ..weights import take


class _Block:
    __slots__ = (
        "ln1_w",
        "ln1_b",
        "w_attn",
        "b_attn",
        "w_proj",
        "b_proj",
        "ln2_w",
        "ln2_b",
        "w_fc",
        "b_fc",
        "w_out",
        "b_out",
    )


class GPT2Model:
    """Weights and forward pass; not an nn.Module (inference only, no autograd)."""

    def __init__(
        self, spec: ModelSpec, weights: dict[str, torch.Tensor], where: str, dtype: torch.dtype, device: str
    ) -> None:
        self.spec = spec
        self.dtype = dtype
        self.device = device
        w = {k.removeprefix("transformer."): v for k, v in weights.items()}
        self.wte = take(w, "wte.weight", where)
        self.wpe = take(w, "wpe.weight", where)
        self.lm_head = w.get("lm_head.weight", self.wte)
        self.ln_f = (take(w, "ln_f.weight", where), take(w, "ln_f.bias", where))
        self.blocks: list[_Block] = []
        for i in range(spec.num_layers):
            p = f"h.{i}."
            b = _Block()
            b.ln1_w, b.ln1_b = take(w, p + "ln_1.weight", where), take(w, p + "ln_1.bias", where)
            b.w_attn, b.b_attn = (
                take(w, p + "attn.c_attn.weight", where).t().contiguous(),
                take(w, p + "attn.c_attn.bias", where),
            )
            b.w_proj, b.b_proj = (
                take(w, p + "attn.c_proj.weight", where).t().contiguous(),
                take(w, p + "attn.c_proj.bias", where),
            )
            b.ln2_w, b.ln2_b = take(w, p + "ln_2.weight", where), take(w, p + "ln_2.bias", where)
            b.w_fc, b.b_fc = take(w, p + "mlp.c_fc.weight", where).t().contiguous(), take(w, p + "mlp.c_fc.bias", where)
            b.w_out, b.b_out = (
                take(w, p + "mlp.c_proj.weight", where).t().contiguous(),
                take(w, p + "mlp.c_proj.bias", where),
            )
            self.blocks.append(b)
        self.scale = spec.head_dim**-0.5
        self.approximate = "none" if spec.hidden_act == "gelu" else "tanh"

    def forward(
        self,
        input_ids: torch.Tensor,
        positions: torch.Tensor,
        meta: AttentionMetadata,
        kv_caches: list[tuple[torch.Tensor, torch.Tensor]],
    ) -> torch.Tensor:
        """input_ids, positions: [T] int64 -> hidden states [T, hidden] before the final LayerNorm."""
        s = self.spec
        H, D, C = s.num_heads, s.head_dim, s.hidden_size
        eps = s.norm_eps
        x = F.embedding(input_ids, self.wte) + F.embedding(positions, self.wpe)
        T = x.shape[0]
        for b, (k_cache, v_cache) in zip(self.blocks, kv_caches):
            h = F.layer_norm(x, (C,), b.ln1_w, b.ln1_b, eps)
            qkv = F.linear(h, b.w_attn, b.b_attn)
            q, k, v = qkv.view(T, 3, H, D).unbind(1)
            write_kv(k_cache, v_cache, k, v, meta.slot_mapping)
            a = paged_attention(q, k_cache, v_cache, meta, self.scale)
            x = x + F.linear(a.reshape(T, C), b.w_proj, b.b_proj)
            h = F.layer_norm(x, (C,), b.ln2_w, b.ln2_b, eps)
            x = x + F.linear(F.gelu(F.linear(h, b.w_fc, b.b_fc), approximate=self.approximate), b.w_out, b.b_out)
        return x

    def compute_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """hidden: [S, hidden] -> logits [S, vocab] float32."""
        C = self.spec.hidden_size
        return F.linear(
            F.layer_norm(hidden, (C,), self.ln_f[0], self.ln_f[1], self.spec.norm_eps), self.lm_head
        ).float()
