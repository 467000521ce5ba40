"""OpenAI / vLLM compatibility of the request fields, with the real `openai` client on a real uvicorn
server (the case shared/cases/serving/repro_openai_defaults.py, each line a test)."""

from __future__ import annotations

import json

import httpx
import openai
import pytest

from neural.generation import LLMEngine, SamplingParams


@pytest.fixture(scope="module")
def client(gen_server):
    return openai.OpenAI(base_url=gen_server.url + "/v1", api_key="unused", max_retries=0, timeout=120)


@pytest.fixture(scope="module")
def engine(demo_lm_dir):
    return LLMEngine(demo_lm_dir)


def test_chat_without_max_tokens_uses_the_rest_of_the_context(client, gen_server):
    r = client.chat.completions.create(
        model="demo-lm", messages=[{"role": "user", "content": "Speak."}], extra_body={"ignore_eos": True}
    )
    max_model_len = gen_server.serving.generation_models()[0]["max_model_len"]
    assert r.choices[0].finish_reason == "length"
    assert r.usage.completion_tokens == max_model_len - r.usage.prompt_tokens
    # completions keep OpenAI's documented default of 16
    c = client.completions.create(model="demo-lm", prompt="ROMEO:\n", extra_body={"ignore_eos": True})
    assert c.usage.completion_tokens == 16 and c.choices[0].finish_reason == "length"


def test_stream_options_without_stream_is_a_400(client):
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(
            model="demo-lm",
            messages=[{"role": "user", "content": "Hi"}],
            max_tokens=4,
            stream_options={"include_usage": True},
        )
    assert e.value.status_code == 400 and "stream_options" in e.value.body["message"]


def test_stream_chunks_carry_usage_null_until_the_last(gen_server):
    body = {
        "model": "demo-lm",
        "messages": [{"role": "user", "content": "Hi"}],
        "max_tokens": 4,
        "ignore_eos": True,  # exactly 4 tokens: a sampled end-of-sequence made this flaky (1 == 4 in a CI run)
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    raw = httpx.post(gen_server.url + "/v1/chat/completions", json=body, timeout=60).text
    events = [json.loads(e[6:]) for e in raw.split("\n\n") if e.startswith("data: {")]
    assert len(events) >= 2
    for e in events[:-1]:
        assert "usage" in e and e["usage"] is None, e
    assert events[-1]["choices"] == [] and events[-1]["usage"]["completion_tokens"] == 4
    # without include_usage no chunk has a usage key (OpenAI omits it)
    body.pop("stream_options")
    raw = httpx.post(gen_server.url + "/v1/chat/completions", json=body, timeout=60).text
    assert all("usage" not in json.loads(e[6:]) for e in raw.split("\n\n") if e.startswith("data: {"))


def test_include_stop_str_in_output(client, engine):
    full = engine.generate(["ROMEO:\n"], SamplingParams(temperature=0, max_tokens=60))[0].text
    words = full.split()
    stop = next(w for w in words[2:] if len(w) >= 3)  # a word the model really produces
    kw = dict(model="demo-lm", prompt="ROMEO:\n", max_tokens=60, temperature=0, stop=[stop])
    cut = client.completions.create(**kw)
    kept = client.completions.create(**kw, extra_body={"include_stop_str_in_output": True})
    assert cut.choices[0].finish_reason == kept.choices[0].finish_reason == "stop"
    assert not cut.choices[0].text.endswith(stop)
    assert kept.choices[0].text == cut.choices[0].text + stop
    assert full.startswith(kept.choices[0].text)


def test_min_tokens_masks_eos_like_transformers(client, engine, demo_lm_dir):
    """Greedy with min_tokens equals transformers' generate with min_new_tokens (EOS masked)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(demo_lm_dir)
    model = AutoModelForCausalLM.from_pretrained(demo_lm_dir, dtype=torch.float32).eval()
    prompt = "ROMEO:\n"
    # find where greedy decoding ends with EOS, then ask for more than that
    plain = engine.generate([prompt], SamplingParams(temperature=0, max_tokens=400))[0]
    assert plain.finish_reason == "stop", "the demo LM should end a speech with EOS"
    n = len(plain.token_ids)
    ids = torch.tensor([tok(prompt, add_special_tokens=False).input_ids])
    with torch.no_grad():
        out = model.generate(ids, do_sample=False, min_new_tokens=n + 5, max_new_tokens=n + 5, pad_token_id=0)
    want = tok.decode(out[0, ids.shape[1] :], skip_special_tokens=True)
    r = client.completions.create(
        model="demo-lm", prompt=prompt, max_tokens=n + 5, temperature=0, extra_body={"min_tokens": n + 5}
    )
    assert r.usage.completion_tokens == n + 5 and r.choices[0].finish_reason == "length"
    assert r.choices[0].text == want


def test_stop_token_ids_and_ignore_eos(client, engine):
    base = engine.generate(["ROMEO:\n"], SamplingParams(temperature=0, max_tokens=20, ignore_eos=True))[0]
    stop_id = base.token_ids[5]
    first = base.token_ids.index(stop_id)
    r = client.completions.create(
        model="demo-lm", prompt="ROMEO:\n", max_tokens=20, temperature=0, extra_body={"stop_token_ids": [stop_id]}
    )
    assert r.choices[0].finish_reason == "stop" and r.usage.completion_tokens == first + 1
    r = client.completions.create(
        model="demo-lm", prompt="ROMEO:\n", max_tokens=400, temperature=0, extra_body={"ignore_eos": True}
    )
    assert r.usage.completion_tokens == 400 and r.choices[0].finish_reason == "length"


@pytest.mark.parametrize("field,value", [("logit_bias", {"5": 1}), ("tools", []), ("frobnicate", 1)])
def test_unknown_parameters_are_refused_by_name(client, field, value):
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(
            model="demo-lm", messages=[{"role": "user", "content": "Hi"}], max_tokens=2, extra_body={field: value}
        )
    assert e.value.body["code"] == "invalid_request"
    assert e.value.body["param"] == f"body.{field}" and repr(field) in e.value.body["message"]
    with pytest.raises(openai.BadRequestError) as e:
        client.completions.create(model="demo-lm", prompt="x", max_tokens=2, extra_body={field: value})
    assert e.value.body["param"] == f"body.{field}"
