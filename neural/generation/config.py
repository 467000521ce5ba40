"""Engine configuration: KV-cache geometry, batching limits, device and dtype."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class EngineConfig:
    """Configuration of one `LLMEngine` (names follow vLLM's engine arguments).

    block_size: tokens per KV-cache block.
    num_kv_blocks: blocks in the preallocated KV cache (per layer, keys and values each);
        `None` sizes the cache to `max_num_seqs` sequences of `max_model_len` tokens.
    max_num_seqs: most sequences in the running queue (the decode batch size limit).
    max_num_batched_tokens: most tokens (prefill + decode) computed in one engine step;
        longer prompts are prefilled in chunks of at most this many tokens.
    max_model_len: longest sequence (prompt + output) accepted; `None` takes the model's
        `max_position_embeddings` (and its sliding window, if smaller).
    enable_prefix_caching: share full KV-cache blocks between sequences with identical prefixes.
    device: "auto" | "cpu" | "cuda" | "cuda:N" (see `neural.device.resolve_device`).
    dtype: "float32" | "float16" | "bfloat16" (half precisions only on CUDA).
    num_threads: torch intra-op threads on CPU; `None` leaves torch's setting alone.
    """

    block_size: int = 16
    num_kv_blocks: int | None = None
    max_num_seqs: int = 64
    max_num_batched_tokens: int = 2048
    max_model_len: int | None = None
    enable_prefix_caching: bool = True
    device: str = "auto"
    dtype: str = "float32"
    num_threads: int | None = None

    def __post_init__(self) -> None:
        if self.block_size < 1:
            raise ValueError(f"EngineConfig.block_size must be >= 1, got {self.block_size}")
        if self.num_kv_blocks is not None and self.num_kv_blocks < 1:
            raise ValueError(f"EngineConfig.num_kv_blocks must be >= 1 or None, got {self.num_kv_blocks}")
        if self.max_num_seqs < 1:
            raise ValueError(f"EngineConfig.max_num_seqs must be >= 1, got {self.max_num_seqs}")
        if self.max_num_batched_tokens < 1:
            raise ValueError(f"EngineConfig.max_num_batched_tokens must be >= 1, got {self.max_num_batched_tokens}")
        if self.max_model_len is not None and self.max_model_len < 1:
            raise ValueError(f"EngineConfig.max_model_len must be >= 1 or None, got {self.max_model_len}")
        if self.dtype not in ("float32", "float16", "bfloat16"):
            raise ValueError(f"EngineConfig.dtype must be float32, float16 or bfloat16, got {self.dtype!r}")
        if self.num_threads is not None and self.num_threads < 1:
            raise ValueError(f"EngineConfig.num_threads must be >= 1 or None, got {self.num_threads}")
