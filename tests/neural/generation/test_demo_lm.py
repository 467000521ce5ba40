"""The committed demo model loads in transformers and our engine, with the same greedy tokens."""

from __future__ import annotations

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from neural.generation import DEMO_LM_DIR, EngineConfig, LLMEngine, SamplingParams


def test_demo_lm_matches_transformers_and_has_eos_and_chat_template(hf_greedy):
    tok = AutoTokenizer.from_pretrained(DEMO_LM_DIR)
    assert tok.eos_token == "<|endoftext|>"
    chat = tok.apply_chat_template([{"role": "user", "content": "Speak."}], tokenize=False, add_generation_prompt=True)
    assert chat == "<|user|>\nSpeak.\n<|assistant|>\n"
    hf = AutoModelForCausalLM.from_pretrained(DEMO_LM_DIR, dtype=torch.float32).eval()
    engine = LLMEngine(DEMO_LM_DIR, EngineConfig(device="cpu", max_num_seqs=4))
    assert engine.apply_chat_template([{"role": "user", "content": "Speak."}]) == chat
    prompts = ["ROMEO:\n", "First Citizen:\nBefore we proceed any further,", chat]
    outs = engine.generate(prompts, SamplingParams(temperature=0, max_tokens=40, ignore_eos=True))
    for prompt, out in zip(prompts, outs):
        ids = tok(prompt, return_tensors="pt").input_ids
        assert ids[0].tolist() == engine.encode(prompt)
        assert out.token_ids == hf_greedy(hf, ids[0].tolist(), 40)
        assert out.text == tok.decode(out.token_ids, skip_special_tokens=True)
