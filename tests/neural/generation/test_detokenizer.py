"""Incremental detokenisation (multi-byte UTF-8 split across tokens) and stop strings."""

from __future__ import annotations

import pytest

from neural.generation import EngineConfig, LLMEngine, SamplingParams
from neural.generation.detokenizer import IncrementalDetokenizer

MULTIBYTE = "Café naïve — 日本語のテキスト 🙂🚀 Ελληνικά"


def test_streaming_multibyte_text_equals_decode(tokenizer):
    ids = tokenizer.encode(MULTIBYTE).ids
    # the byte-level tokenizer splits some characters over several tokens: check one really is split
    assert any("\ufffd" in tokenizer.decode([i]) for i in ids)
    prompt = tokenizer.encode("Hello").ids
    d = IncrementalDetokenizer(tokenizer, prompt, stop=[], include_stop=False, skip_special_tokens=True)
    deltas = []
    for t in ids:
        d.add_token(t)
        deltas.append(d.emit(finished=False))
    assert all("\ufffd" not in x for x in deltas)  # never a half character on the wire
    assert "".join(deltas) == MULTIBYTE == tokenizer.decode(ids)


def test_truncated_character_is_flushed_as_replacement(tokenizer):
    ids = tokenizer.encode("ab🙂").ids
    byte_tokens = [i for i in ids if "\ufffd" in tokenizer.decode([i])]
    assert byte_tokens
    cut = ids[: ids.index(byte_tokens[0]) + 1]  # stop inside the emoji
    d = IncrementalDetokenizer(tokenizer, [], stop=[], include_stop=False, skip_special_tokens=True)
    for t in cut:
        d.add_token(t)
    assert d.emit(False) == "ab"
    d.flush()
    assert d.emit(True) == "\ufffd"


@pytest.mark.parametrize("include", [False, True])
def test_stop_string_cut_and_held_back(tokenizer, include):
    text = "the slings and arrows of outrageous fortune"
    ids = tokenizer.encode(text).ids
    d = IncrementalDetokenizer(tokenizer, [], stop=["arrows of"], include_stop=include, skip_special_tokens=True)
    streamed, hit = "", None
    for t in ids:
        hit = d.add_token(t)
        streamed += d.emit(finished=hit is not None)
        # a possible beginning of the stop string is never streamed early
        assert not streamed.endswith("arr") and "arrows" not in streamed or include
        if hit:
            break
    assert hit == "arrows of"
    expected = "the slings and arrows of" if include else "the slings and "
    assert d.output_text == expected and streamed == expected


def test_engine_stop_strings_and_stop_token_ids(llama_dir, make_prompts):
    engine = LLMEngine(llama_dir, EngineConfig(device="cpu", block_size=4))
    prompt = make_prompts(1, seed=11, lo=10, hi=10)[0]
    [full] = engine.generate([prompt], SamplingParams(temperature=0, max_tokens=40, ignore_eos=True))
    assert full.finish_reason == "length" and len(full.token_ids) == 40
    text = full.text
    stop = text[len(text) // 2 : len(text) // 2 + 3]
    assert stop.strip() and stop in text
    [cut] = engine.generate([prompt], SamplingParams(temperature=0, max_tokens=40, ignore_eos=True, stop=[stop]))
    assert cut.finish_reason == "stop" and cut.stop_reason == stop
    assert cut.text == text[: text.index(stop)]
    assert full.token_ids[: len(cut.token_ids)] == cut.token_ids and len(cut.token_ids) < 40
    tok = full.token_ids[5]
    [by_id] = engine.generate(
        [prompt], SamplingParams(temperature=0, max_tokens=40, ignore_eos=True, stop_token_ids=[tok])
    )
    assert by_id.finish_reason == "stop" and by_id.stop_reason == tok
    assert by_id.token_ids == full.token_ids[: full.token_ids.index(tok) + 1]
    assert engine.num_used_blocks == 0
