"""Llama-family forward pass (Llama, Qwen2, Mistral) over the paged KV cache.

Pre-norm decoder: RMSNorm -> attention (RoPE on q and k, grouped-query heads) -> residual ->
RMSNorm -> SwiGLU MLP -> residual; final RMSNorm; LM head (tied to the embedding when the
checkpoint has no `lm_head.weight`). q/k/v/o and MLP biases are used when present (Qwen2 has
q/k/v biases). Numerics follow `transformers`' LlamaForCausalLM: RMSNorm in float32, RoPE in
the non-interleaved "rotate half" layout with inverse frequencies `theta ** (-2i / head_dim)`,
optionally scaled ("linear", "llama3").
q, k, v and gate, up are each fused into one matrix multiply.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from ..attention import AttentionMetadata, paged_attention, write_kv
from ..model_config import ModelSpec
from ..weights import take


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """RMSNorm as in transformers' LlamaRMSNorm (variance in float32; fused kernel for float32 input)."""
    if x.dtype == torch.float32:
        return F.rms_norm(x, (x.shape[-1],), weight, eps)
    dtype = x.dtype
    x32 = x.float()
    x32 = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + eps)
    return weight * x32.to(dtype)


def scaled_inv_freq(inv_freq: torch.Tensor, scaling: dict | None) -> torch.Tensor:
    """Apply RoPE scaling to the inverse frequencies: "linear" (positions / factor) or "llama3"
    (Llama 3.1's frequency-dependent scaling: low frequencies / factor, high ones kept, a smooth
    blend between), as transformers' `rope_init_fns` define them. Raises KeyError naming a missing field."""
    if not scaling or scaling["rope_type"] == "default":
        return inv_freq
    factor = float(scaling["factor"])
    if scaling["rope_type"] == "linear":
        return inv_freq / factor
    low, high = float(scaling["low_freq_factor"]), float(scaling["high_freq_factor"])
    old_len = float(scaling["original_max_position_embeddings"])
    wavelen = 2 * math.pi / inv_freq
    llama = torch.where(wavelen > old_len / low, inv_freq / factor, inv_freq)
    smooth = (old_len / wavelen - low) / (high - low)
    smoothed = (1 - smooth) * llama / factor + smooth * llama
    medium = ~(wavelen < old_len / high) * ~(wavelen > old_len / low)
    return torch.where(medium, smoothed, llama)


def rope_tables(
    head_dim: int, theta: float, max_positions: int, dtype: torch.dtype, device: str, scaling: dict | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """cos, sin tables `[max_positions, head_dim]` (computed in float32, cast to `dtype`)."""
    inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.int64).float() / head_dim))
    inv_freq = scaled_inv_freq(inv_freq, scaling)
    t = torch.arange(max_positions, dtype=torch.float32)
    freqs = t[:, None] * inv_freq[None, :]
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos().to(dtype).to(device), emb.sin().to(dtype).to(device)


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """x: [T, heads, head_dim]; cos, sin: [T, head_dim]."""
    half = x.shape[-1] // 2
    rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    return x * cos[:, None, :] + rotated * sin[:, None, :]


class _Layer:
    __slots__ = ("in_norm", "wqkv", "bqkv", "wo", "bo", "post_norm", "w_gate_up", "b_gate_up", "w_down", "b_down")


class LlamaModel:
    """Weights and forward pass; not an nn.Module (inference only, no autograd)."""

    def __init__(
        self, spec: ModelSpec, weights: dict[str, torch.Tensor], where: str, dtype: torch.dtype, device: str
    ) -> None:
        self.spec = spec
        self.dtype = dtype
        self.device = device
        w = {k.removeprefix("model."): v for k, v in weights.items()}
        self.embed = take(w, "embed_tokens.weight", where)
        self.lm_head = w.get("lm_head.weight", self.embed)
        self.norm = take(w, "norm.weight", where)
        self.layers: list[_Layer] = []
        for i in range(spec.num_layers):
            p = f"layers.{i}."
            L = _Layer()
            L.in_norm = take(w, p + "input_layernorm.weight", where)
            L.post_norm = take(w, p + "post_attention_layernorm.weight", where)
            L.wqkv = torch.cat([take(w, p + f"self_attn.{n}_proj.weight", where) for n in "qkv"]).contiguous()
            biases = [w.get(p + f"self_attn.{n}_proj.bias") for n in "qkv"]
            L.bqkv = torch.cat(biases).contiguous() if all(b is not None for b in biases) else None
            L.wo = take(w, p + "self_attn.o_proj.weight", where)
            L.bo = w.get(p + "self_attn.o_proj.bias")
            L.w_gate_up = torch.cat(
                [take(w, p + "mlp.gate_proj.weight", where), take(w, p + "mlp.up_proj.weight", where)]
            ).contiguous()
            gb, ub = w.get(p + "mlp.gate_proj.bias"), w.get(p + "mlp.up_proj.bias")
            L.b_gate_up = torch.cat([gb, ub]) if gb is not None and ub is not None else None
            L.w_down = take(w, p + "mlp.down_proj.weight", where)
            L.b_down = w.get(p + "mlp.down_proj.bias")
            self.layers.append(L)
        self.cos, self.sin = rope_tables(
            spec.head_dim, spec.rope_theta, spec.max_position_embeddings, dtype, device, spec.rope_scaling
        )
        self.scale = spec.head_dim**-0.5

    def forward(
        self,
        input_ids: torch.Tensor,
        positions: torch.Tensor,
        meta: AttentionMetadata,
        kv_caches: list[tuple[torch.Tensor, torch.Tensor]],
    ) -> torch.Tensor:
        """input_ids, positions: [T] int64 -> hidden states [T, hidden] before the final norm."""
        s = self.spec
        H, KVH, D = s.num_heads, s.num_kv_heads, s.head_dim
        x = F.embedding(input_ids, self.embed)
        cos, sin = self.cos[positions], self.sin[positions]
        T = x.shape[0]
        for L, (k_cache, v_cache) in zip(self.layers, kv_caches):
            h = rms_norm(x, L.in_norm, s.norm_eps)
            qkv = F.linear(h, L.wqkv, L.bqkv)
            q = apply_rope(qkv[:, : H * D].view(T, H, D), cos, sin)
            k = apply_rope(qkv[:, H * D : (H + KVH) * D].view(T, KVH, D), cos, sin)
            v = qkv[:, (H + KVH) * D :].reshape(T, KVH, D)
            write_kv(k_cache, v_cache, k, v, meta.slot_mapping)
            a = paged_attention(q, k_cache, v_cache, meta, self.scale)
            x = x + F.linear(a.reshape(T, H * D), L.wo, L.bo)
            h = rms_norm(x, L.post_norm, s.norm_eps)
            gu = F.linear(h, L.w_gate_up, L.b_gate_up)
            gate, up = gu.chunk(2, dim=-1)
            x = x + F.linear(F.silu(gate) * up, L.w_down, L.b_down)
        return x

    def compute_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """hidden: [S, hidden] (rows to sample from) -> logits [S, vocab] float32."""
        return F.linear(rms_norm(hidden, self.norm, self.spec.norm_eps), self.lm_head).float()
