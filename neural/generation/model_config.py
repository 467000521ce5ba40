"""Read a Hugging Face `config.json` into the few numbers our forward pass needs."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

LLAMA_FAMILY = {"llama", "qwen2", "mistral"}
SUPPORTED = LLAMA_FAMILY | {"gpt2"}


@dataclass(slots=True)
class ModelSpec:
    """Architecture of a causal LM.

    arch: "llama" (Llama, Qwen2, Mistral: RMSNorm, RoPE, GQA, SwiGLU) or "gpt2" (LayerNorm,
    learned positions, GELU). Biases are read from the weights when present (Qwen2's q/k/v).
    """

    model_type: str
    arch: str
    vocab_size: int
    hidden_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    intermediate_size: int
    max_position_embeddings: int
    norm_eps: float
    rope_theta: float = 10000.0
    tie_word_embeddings: bool = False
    hidden_act: str = "silu"
    sliding_window: int | None = None
    eos_token_ids: tuple[int, ...] = ()
    rope_scaling: dict | None = None  # {"rope_type": "linear" | "llama3", ...} or None

    def __post_init__(self) -> None:
        if self.arch not in ("llama", "gpt2"):
            raise ValueError(f"ModelSpec.arch must be 'llama' or 'gpt2', got {self.arch!r}")
        if self.num_heads % self.num_kv_heads:
            raise ValueError(
                f"num_attention_heads ({self.num_heads}) must be a multiple of num_key_value_heads "
                f"({self.num_kv_heads})"
            )

    @property
    def kv_bytes_per_token(self) -> int:
        """KV-cache elements per token over all layers (keys and values); multiply by dtype size."""
        return 2 * self.num_layers * self.num_kv_heads * self.head_dim


def _eos(cfg: dict) -> tuple[int, ...]:
    eos = cfg.get("eos_token_id")
    if eos is None:
        return ()
    return tuple(eos) if isinstance(eos, list) else (int(eos),)


def is_causal_lm(model_dir: str | Path) -> bool:
    """True when `model_dir/config.json` names a model type this engine supports and a causal-LM
    architecture (`*ForCausalLM` / `*LMHeadModel`, or no `architectures` at all)."""
    path = Path(model_dir) / "config.json"
    if not path.is_file():
        return False
    try:
        cfg = json.loads(path.read_text())
    except (OSError, ValueError):
        return False
    archs = cfg.get("architectures") or []
    return cfg.get("model_type") in SUPPORTED and (
        not archs or any(a.endswith(("ForCausalLM", "LMHeadModel")) for a in archs)
    )


def load_spec(model_dir: str | Path) -> ModelSpec:
    """Parse `model_dir/config.json`.

    Raises FileNotFoundError when it is missing, ValueError naming the field for an unsupported
    `model_type`, `hidden_act` or `rope_scaling` (only unscaled RoPE is implemented).
    """
    path = Path(model_dir) / "config.json"
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no config.json (expected a Hugging Face model directory)")
    cfg = json.loads(path.read_text())
    mt = cfg.get("model_type")
    if mt not in SUPPORTED:
        raise ValueError(
            f"{path}: model_type {mt!r} is not supported by the generation engine; supported: {sorted(SUPPORTED)}"
        )
    gen_cfg = Path(model_dir) / "generation_config.json"
    eos = _eos(cfg)
    if gen_cfg.is_file():
        eos = tuple(dict.fromkeys(eos + _eos(json.loads(gen_cfg.read_text()))))
    if mt == "gpt2":
        act = cfg.get("activation_function", "gelu_new")
        if act not in ("gelu_new", "gelu_pytorch_tanh", "gelu"):
            raise ValueError(f"{path}: activation_function {act!r} is not supported; supported: gelu_new, gelu")
        for flag, ok in (("scale_attn_by_inverse_layer_idx", False), ("scale_attn_weights", True)):
            if cfg.get(flag, ok) != ok:
                raise ValueError(f"{path}: {flag}={cfg[flag]!r} is not supported; supported: {ok}")
        n_embd = cfg["n_embd"]
        return ModelSpec(
            model_type=mt,
            arch="gpt2",
            vocab_size=cfg["vocab_size"],
            hidden_size=n_embd,
            num_layers=cfg["n_layer"],
            num_heads=cfg["n_head"],
            num_kv_heads=cfg["n_head"],
            head_dim=n_embd // cfg["n_head"],
            intermediate_size=cfg.get("n_inner") or 4 * n_embd,
            max_position_embeddings=cfg.get("n_positions", 1024),
            norm_eps=cfg.get("layer_norm_epsilon", 1e-5),
            tie_word_embeddings=cfg.get("tie_word_embeddings", True),
            hidden_act=act,
            eos_token_ids=eos,
        )
    rope = cfg.get("rope_scaling") or None
    params = cfg.get("rope_parameters") or {}
    scaling = dict(rope or params)
    rope_type = scaling.get("rope_type", scaling.get("type")) or "default"
    if rope_type not in ("default", "linear", "llama3"):
        raise ValueError(
            f"{path}: rope_scaling / rope_parameters type {rope_type!r} is not supported; "
            "supported: default, linear, llama3"
        )
    scaling["rope_type"] = rope_type
    theta = cfg.get("rope_theta", params.get("rope_theta", 10000.0))
    act = cfg.get("hidden_act", "silu")
    if act != "silu":
        raise ValueError(f"{path}: hidden_act {act!r} is not supported for {mt}; supported: silu")
    heads = cfg["num_attention_heads"]
    sliding = cfg.get("sliding_window") if (mt == "mistral" or cfg.get("use_sliding_window")) else None
    return ModelSpec(
        model_type=mt,
        arch="llama",
        vocab_size=cfg["vocab_size"],
        hidden_size=cfg["hidden_size"],
        num_layers=cfg["num_hidden_layers"],
        num_heads=heads,
        num_kv_heads=cfg.get("num_key_value_heads") or heads,
        head_dim=cfg.get("head_dim") or cfg["hidden_size"] // heads,
        intermediate_size=cfg["intermediate_size"],
        max_position_embeddings=cfg.get("max_position_embeddings", 2048),
        norm_eps=cfg.get("rms_norm_eps", 1e-6),
        rope_theta=float(theta),
        tie_word_embeddings=cfg.get("tie_word_embeddings", False),
        hidden_act=act,
        sliding_window=sliding,
        eos_token_ids=eos,
        rope_scaling=None if rope_type == "default" else scaling,
    )
