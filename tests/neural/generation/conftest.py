"""Tiny random causal LMs (fixed seeds) saved in Hugging Face format, with a byte-level BPE tokenizer."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

TEXT = (
    "To be, or not to be, that is the question: whether 'tis nobler in the mind to suffer "
    "the slings and arrows of outrageous fortune. Café, naïve, façade — 日本語のテキスト, "
    "emoji 🙂🚀, Ελληνικά, русский текст. "
) * 4


def _tokenizer(vocab_size: int):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=["<|endoftext|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator([TEXT], trainer=trainer)
    return tok


def _save(model, tok, path: Path) -> Path:
    model.save_pretrained(path)
    tok.save(str(path / "tokenizer.json"))
    return path


@pytest.fixture(scope="session", autouse=True)
def _threads():
    torch.set_num_threads(1)


@pytest.fixture(scope="session")
def tokenizer():
    return _tokenizer(320)


@pytest.fixture(scope="session")
def llama_dir(tmp_path_factory, tokenizer) -> Path:
    """Llama: GQA (4 query heads, 2 KV heads), untied LM head, rope_theta 500."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    cfg = LlamaConfig(
        vocab_size=tokenizer.get_vocab_size(),
        hidden_size=64,
        intermediate_size=160,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=512,
        rope_theta=500.0,
        tie_word_embeddings=False,
        eos_token_id=0,
        bos_token_id=0,
        initializer_range=0.2,
    )
    return _save(LlamaForCausalLM(cfg).eval(), tokenizer, tmp_path_factory.mktemp("llama"))


@pytest.fixture(scope="session")
def llama3_dir(tmp_path_factory, tokenizer) -> Path:
    """Llama with Llama 3.1 RoPE scaling (factor 8, original context 64) and tied embeddings."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(3)
    cfg = LlamaConfig(
        vocab_size=tokenizer.get_vocab_size(),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=512,
        rope_theta=10000.0,
        rope_scaling={
            "rope_type": "llama3",
            "factor": 8.0,
            "low_freq_factor": 1.0,
            "high_freq_factor": 4.0,
            "original_max_position_embeddings": 64,
        },
        tie_word_embeddings=True,
        eos_token_id=0,
        initializer_range=0.2,
    )
    return _save(LlamaForCausalLM(cfg).eval(), tokenizer, tmp_path_factory.mktemp("llama3"))


@pytest.fixture(scope="session")
def qwen2_dir(tmp_path_factory, tokenizer) -> Path:
    """Qwen2: q/k/v biases, tied embeddings, rope_theta 1e6."""
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(1)
    cfg = Qwen2Config(
        vocab_size=tokenizer.get_vocab_size(),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=1,
        max_position_embeddings=512,
        rope_theta=1e6,
        tie_word_embeddings=True,
        eos_token_id=0,
        initializer_range=0.2,
    )
    model = Qwen2ForCausalLM(cfg).eval()
    with torch.no_grad():  # random biases (HF initialises them to zero, which would test nothing)
        for layer in model.model.layers:
            for proj in (layer.self_attn.q_proj, layer.self_attn.k_proj, layer.self_attn.v_proj):
                proj.bias.normal_(0, 0.2)
    return _save(model, tokenizer, tmp_path_factory.mktemp("qwen2"))


@pytest.fixture(scope="session")
def gpt2_dir(tmp_path_factory, tokenizer) -> Path:
    """GPT-2: learned positions, LayerNorm, gelu_new, Conv1D weights, tied head."""
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(2)
    cfg = GPT2Config(
        vocab_size=tokenizer.get_vocab_size(),
        n_embd=64,
        n_layer=2,
        n_head=4,
        n_positions=512,
        eos_token_id=0,
        bos_token_id=0,
        initializer_range=0.2,
    )
    return _save(GPT2LMHeadModel(cfg).eval(), tokenizer, tmp_path_factory.mktemp("gpt2"))


def random_prompts(n: int, seed: int = 0, lo: int = 3, hi: int = 40, vocab: int = 320) -> list[list[int]]:
    """n random prompts of token ids (never the EOS id 0)."""
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(lo, hi + 1, (n,), generator=g).tolist()
    return [torch.randint(1, vocab, (L,), generator=g).tolist() for L in lengths]


@pytest.fixture(scope="session")
def make_prompts():
    return random_prompts


def hf_greedy_ids(model, prompt_ids: list[int], n: int) -> list[int]:
    """transformers' greedy generate of exactly n tokens with EOS disabled (not suppressed, as
    min_new_tokens would do: our ignore_eos keeps EOS sampleable, like vLLM's). Clears the
    model's EOS ids (transformers 5 falls back to them when the call passes none)."""
    model.generation_config.eos_token_id = None
    model.config.eos_token_id = None
    ids = torch.tensor([prompt_ids])
    out = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=n, do_sample=False, pad_token_id=0)
    assert out.shape[1] == len(prompt_ids) + n
    return out[0, len(prompt_ids) :].tolist()


@pytest.fixture(scope="session")
def hf_greedy():
    return hf_greedy_ids
