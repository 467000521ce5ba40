"""Train the demo causal LM (Llama architecture) on Tiny Shakespeare, on the CPU.

Writes a Hugging Face format directory (config.json, model.safetensors, tokenizer.json,
tokenizer_config.json with an EOS token and a chat template, generation_config.json) that
both `transformers.AutoModelForCausalLM.from_pretrained` and our generation engine load.

Usage::

    uv run python scripts/train_demo_lm.py [--out models/demo-lm] [--steps 480] [--max-minutes 14]

Corpus: data/tinyshakespeare.txt (public domain; split into speeches at blank lines, each
speech followed by the EOS token). Tokenizer: byte-level BPE from the `tokenizers` library.
Model: `LlamaForCausalLM` from transformers is used only as the training-time module (the
architecture definition we want to ship); inference in the workbench uses our own forward pass.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
EOS = "<|endoftext|>"
SPECIAL = [EOS, "<|system|>", "<|user|>", "<|assistant|>"]
CHAT_TEMPLATE = (
    "{% for message in messages %}<|{{ message['role'] }}|>\n{{ message['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)


def build_tokenizer(text: str, vocab_size: int):
    """Train a byte-level BPE tokenizer (vocab `vocab_size`, special tokens first) on `text`."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator([text], trainer=trainer)
    return tok


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=ROOT / "data" / "tinyshakespeare.txt")
    ap.add_argument("--out", type=Path, default=ROOT / "models" / "demo-lm")
    ap.add_argument("--vocab-size", type=int, default=2048)
    ap.add_argument("--hidden", type=int, default=128)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--kv-heads", type=int, default=2)
    ap.add_argument("--intermediate", type=int, default=384)
    ap.add_argument("--context", type=int, default=256)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--steps", type=int, default=480)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--max-minutes", type=float, default=14.0, help="stop early (and still save) after this long")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    torch.manual_seed(args.seed)
    random.seed(args.seed)
    torch.set_num_threads(args.threads)
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    text = args.data.read_text(encoding="utf-8")
    t0 = time.perf_counter()
    tok = build_tokenizer(text, args.vocab_size)
    eos_id = tok.token_to_id(EOS)
    speeches = [s.strip("\n") + "\n" for s in text.split("\n\n") if s.strip()]
    ids: list[int] = []
    for enc in tok.encode_batch(speeches):
        ids.extend(enc.ids)
        ids.append(eos_id)
    data = torch.tensor(ids, dtype=torch.long)
    n_val = len(data) // 20
    train, val = data[:-n_val], data[-n_val:]
    print(
        f"tokenizer: vocab {tok.get_vocab_size()}, corpus {len(data)} tokens ({time.perf_counter() - t0:.1f}s)",
        flush=True,
    )

    config = LlamaConfig(
        vocab_size=tok.get_vocab_size(),
        hidden_size=args.hidden,
        intermediate_size=args.intermediate,
        num_hidden_layers=args.layers,
        num_attention_heads=args.heads,
        num_key_value_heads=args.kv_heads,
        head_dim=args.hidden // args.heads,
        max_position_embeddings=1024,
        rope_theta=10000.0,
        rms_norm_eps=1e-5,
        tie_word_embeddings=True,
        bos_token_id=eos_id,
        eos_token_id=eos_id,
        pad_token_id=eos_id,
    )
    model = LlamaForCausalLM(config)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"model: {n_params / 1e6:.2f}M parameters", flush=True)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.95), weight_decay=0.1)
    warmup = max(1, args.steps // 20)

    def lr_at(step: int) -> float:
        if step < warmup:
            return args.lr * (step + 1) / warmup
        frac = (step - warmup) / max(1, args.steps - warmup)
        return args.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, frac))))

    def batch(source: torch.Tensor, n: int) -> tuple[torch.Tensor, torch.Tensor]:
        starts = torch.randint(0, len(source) - args.context - 1, (n,))
        x = torch.stack([source[s : s + args.context] for s in starts])
        y = torch.stack([source[s + 1 : s + args.context + 1] for s in starts])
        return x, y

    @torch.no_grad()
    def val_loss() -> float:
        model.eval()
        g = torch.Generator().manual_seed(1)
        losses = []
        for _ in range(4):
            starts = torch.randint(0, len(val) - args.context - 1, (16,), generator=g)
            x = torch.stack([val[s : s + args.context] for s in starts])
            y = torch.stack([val[s + 1 : s + args.context + 1] for s in starts])
            losses.append(_ce(model(input_ids=x).logits, y))
        model.train()
        return sum(losses) / len(losses)

    def _ce(logits: torch.Tensor, y: torch.Tensor) -> float:
        return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1)).item()

    model.train()
    start = time.perf_counter()
    loss_ema = None
    step = 0
    for step in range(args.steps):
        for group in opt.param_groups:
            group["lr"] = lr_at(step)
        x, y = batch(train, args.batch)
        logits = model(input_ids=x).logits
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        loss_ema = loss.item() if loss_ema is None else 0.95 * loss_ema + 0.05 * loss.item()
        elapsed = time.perf_counter() - start
        if step % 25 == 0:
            print(
                f"step {step} loss {loss.item():.3f} ema {loss_ema:.3f} lr {lr_at(step):.2e} {elapsed:.0f}s", flush=True
            )
        if elapsed > args.max_minutes * 60:
            print(f"time cap reached at step {step}", flush=True)
            break
    train_seconds = time.perf_counter() - start
    vloss = val_loss()
    print(
        f"done: {step + 1} steps in {train_seconds:.0f}s, train loss (EMA) {loss_ema:.3f}, val loss {vloss:.3f}",
        flush=True,
    )

    args.out.mkdir(parents=True, exist_ok=True)
    model.generation_config.eos_token_id = eos_id
    model.generation_config.pad_token_id = eos_id
    model.generation_config.bos_token_id = eos_id
    model.save_pretrained(args.out, safe_serialization=True)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token=EOS, bos_token=EOS, pad_token=EOS, unk_token=None)
    fast.chat_template = CHAT_TEMPLATE
    fast.model_max_length = 1024
    fast.save_pretrained(args.out)
    # older transformers and other readers look for the template inside tokenizer_config.json
    tc_path = args.out / "tokenizer_config.json"
    tc = json.loads(tc_path.read_text())
    tc["chat_template"] = CHAT_TEMPLATE
    tc_path.write_text(json.dumps(tc, indent=2) + "\n")
    (args.out / "training.json").write_text(
        json.dumps(
            {
                "corpus": "data/tinyshakespeare.txt",
                "parameters": n_params,
                "steps": step + 1,
                "batch": args.batch,
                "context": args.context,
                "train_seconds": round(train_seconds, 1),
                "threads": args.threads,
                "train_loss_ema": round(loss_ema, 4),
                "val_loss": round(vloss, 4),
                "args": {
                    k: (
                        str(v.resolve().relative_to(ROOT))
                        if isinstance(v, Path) and v.resolve().is_relative_to(ROOT)
                        else str(v)
                    )
                    for k, v in vars(args).items()
                },
            },
            indent=2,
        )
        + "\n"
    )
    print(f"wrote {args.out}", flush=True)


if __name__ == "__main__":
    main()
