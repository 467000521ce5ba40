"""OpenAI-compatible generation over a real uvicorn server, driven by the `openai` client."""

from __future__ import annotations

import asyncio
import json
import time

import httpx
import jinja2
import openai
import pytest

from neural.generation import LLMEngine, SamplingParams


@pytest.fixture(scope="module")
def client(gen_server):
    return openai.OpenAI(base_url=gen_server.url + "/v1", api_key="unused", max_retries=0, timeout=60)


@pytest.fixture(scope="module")
def reference(demo_lm_dir):
    """The same model in a second, offline engine: what the API must reproduce for greedy requests."""
    engine = LLMEngine(demo_lm_dir)

    def run(prompt, max_tokens, **kw):
        return engine.generate([prompt], SamplingParams(temperature=0, max_tokens=max_tokens, **kw))[0]

    return run


def chat_prompt(demo_lm_dir, messages):
    env = jinja2.Environment(trim_blocks=True, lstrip_blocks=True)
    return env.from_string((demo_lm_dir / "chat_template.jinja").read_text()).render(
        messages=messages, add_generation_prompt=True
    )


def test_models_list(client):
    ids = [m.id for m in client.models.list()]
    assert ids == ["demo-lm"]


def test_models_retrieve(client):
    """n16: `client.models.retrieve` (GET /v1/models/{id}, which LangChain and vLLM routers call) was 404
    "no route"."""
    import openai

    card = client.models.retrieve("demo-lm")
    assert (card.id, card.object, card.owned_by) == ("demo-lm", "model", "workbench")
    assert (
        card.model_dump()["max_model_len"] == next(m for m in client.models.list() if m.id == "demo-lm").max_model_len
    )
    with pytest.raises(openai.NotFoundError) as e:
        client.models.retrieve("no-such-lm")
    assert (
        e.value.body["code"] == "not_found" and "no model named 'no-such-lm'; known: demo-lm" in e.value.body["message"]
    )


def test_completion_matches_the_engine(client, reference):
    r = client.completions.create(model="demo-lm", prompt="ROMEO:\n", max_tokens=12, temperature=0)
    want = reference("ROMEO:\n", 12)
    assert r.choices[0].text == want.text
    assert r.choices[0].finish_reason == want.finish_reason
    assert r.usage.completion_tokens == len(want.token_ids)
    assert r.usage.prompt_tokens == want.num_prompt_tokens
    assert r.object == "text_completion" and r.model == "demo-lm"


def test_completion_streaming_concatenates_to_the_same_text(client, reference):
    stream = client.completions.create(
        model="demo-lm",
        prompt="ROMEO:\n",
        max_tokens=12,
        temperature=0,
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    text = "".join(c.choices[0].text for c in chunks if c.choices)
    assert text == reference("ROMEO:\n", 12).text
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] in ("length", "stop")
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens > 0
    assert len([c for c in chunks if c.choices]) > 1  # really streamed, not one blob


def test_sse_wire_format_ends_with_done(gen_server):
    with httpx.stream(
        "POST",
        gen_server.url + "/v1/completions",
        json={"model": "demo-lm", "prompt": "To be", "max_tokens": 4, "temperature": 0, "stream": True},
    ) as r:
        assert r.headers["content-type"].startswith("text/event-stream")
        lines = [line for line in r.iter_lines() if line]
    assert lines[-1] == "data: [DONE]"
    assert all(line.startswith("data: ") for line in lines)
    json.loads(lines[0][len("data: ") :])


def test_batch_of_prompts(client, reference):
    r = client.completions.create(model="demo-lm", prompt=["First", "Second line"], max_tokens=6, temperature=0)
    assert [c.index for c in r.choices] == [0, 1]
    assert [c.text for c in r.choices] == [reference("First", 6).text, reference("Second line", 6).text]


def test_chat_completion_uses_the_chat_template(client, reference, demo_lm_dir):
    messages = [{"role": "system", "content": "You speak in verse."}, {"role": "user", "content": "Who art thou?"}]
    want = reference(chat_prompt(demo_lm_dir, messages), 10)
    r = client.chat.completions.create(model="demo-lm", messages=messages, max_tokens=10, temperature=0)
    assert r.choices[0].message.role == "assistant"
    assert r.choices[0].message.content == want.text
    stream = client.chat.completions.create(
        model="demo-lm", messages=messages, max_tokens=10, temperature=0, stream=True
    )
    chunks = list(stream)
    assert chunks[0].choices[0].delta.role == "assistant"
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == want.text
    assert chunks[-1].choices[0].finish_reason in ("length", "stop")


def test_seeded_sampling_is_reproducible(client):
    kw = dict(model="demo-lm", prompt="KING:", max_tokens=10, temperature=0.9, top_p=0.95, seed=1234)
    assert client.completions.create(**kw).choices[0].text == client.completions.create(**kw).choices[0].text


def test_errors_use_the_v1_shape(client, gen_server):
    with pytest.raises(openai.NotFoundError) as e:
        client.completions.create(model="nope", prompt="x", max_tokens=2)
    assert e.value.body["code"] == "not_found" and "nope" in e.value.body["message"]
    with pytest.raises(openai.BadRequestError) as e:  # 400 as OpenAI and vLLM answer
        client.completions.create(model="demo-lm", prompt="x", max_tokens=2, temperature=7)
    assert e.value.body["code"] == "invalid_request" and e.value.body["param"] == "body.temperature"
    with pytest.raises(openai.BadRequestError) as e:
        client.completions.create(model="demo-lm", prompt="x " * 600, max_tokens=600)
    assert "max_model_len" in e.value.body["message"]
    r = httpx.post(
        gen_server.url + "/v1/chat/completions",
        json={"model": "demo-lm", "messages": [{"role": "wizard", "content": "hi"}]},
    )
    assert r.status_code == 400 and r.json()["error"]["param"] == "body.messages[0].role"
    assert "Traceback" not in r.text


async def test_a_refused_prompt_in_a_batch_aborts_the_admitted_ones(gen_server):
    serving = gen_server.serving
    before = _generated_tokens()
    body = {"model": "demo-lm", "prompt": ["ROMEO:\n" * 10, "x " * 1200], "max_tokens": 900, "ignore_eos": True}
    async with httpx.AsyncClient(base_url=gen_server.url, timeout=30) as http:
        r = await http.post("/v1/completions", json=body)
    assert r.status_code == 400 and "max_model_len" in r.json()["error"]["message"]
    assert await _wait_freed(serving), serving.kv_blocks("demo-lm")
    assert _generated_tokens() - before < 900  # the first prompt was aborted, not left running


async def _wait_freed(serving, timeout_s=5.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if serving.kv_blocks("demo-lm")["used"] == 0 and serving.unfinished_generations("demo-lm") == 0:
            return True
        await asyncio.sleep(0.01)
    return False


def _generated_tokens() -> float:
    from neural.metrics import METRICS_REGISTRY

    return METRICS_REGISTRY.get_sample_value("workbench_generation_tokens_total", {"model_name": "demo-lm"}) or 0.0


async def test_streaming_disconnect_frees_kv_blocks(gen_server):
    serving = gen_server.serving
    assert serving.kv_blocks("demo-lm")["used"] == 0
    before = _generated_tokens()
    body = {
        "model": "demo-lm",
        "prompt": "ROMEO:\n" * 20,
        "max_tokens": 900,
        "ignore_eos": True,
        "temperature": 0,
        "stream": True,
    }
    async with httpx.AsyncClient(base_url=gen_server.url, timeout=30) as http:
        async with http.stream("POST", "/v1/completions", json=body) as r:
            assert r.status_code == 200
            seen = 0
            async for line in r.aiter_lines():
                if line.startswith("data: "):
                    seen += 1
                    if seen == 3:
                        assert serving.kv_blocks("demo-lm")["used"] > 0  # the request holds blocks now
                        break
    # leaving the block closed the connection: the request is aborted and its blocks freed
    assert await _wait_freed(serving), serving.kv_blocks("demo-lm")
    assert _generated_tokens() - before < 900  # it was cut short, not run to the end


async def test_non_streaming_disconnect_frees_kv_blocks(gen_server):
    serving = gen_server.serving
    before = _generated_tokens()
    body = {"model": "demo-lm", "prompt": "JULIET:\n" * 20, "max_tokens": 900, "ignore_eos": True, "temperature": 0}
    async with httpx.AsyncClient(base_url=gen_server.url) as http:
        task = asyncio.ensure_future(http.post("/v1/completions", json=body))
        deadline = time.monotonic() + 10
        while serving.kv_blocks("demo-lm")["used"] == 0 and time.monotonic() < deadline:
            await asyncio.sleep(0.005)
        assert serving.kv_blocks("demo-lm")["used"] > 0
        task.cancel()  # the client gives up: its connection closes
        with pytest.raises(asyncio.CancelledError):
            await task
    assert await _wait_freed(serving), serving.kv_blocks("demo-lm")
    assert _generated_tokens() - before < 900


async def test_too_many_generations_get_429_and_admitted_ones_finish(gen_server):
    body = {"model": "demo-lm", "prompt": "HAMLET:", "max_tokens": 40, "ignore_eos": True, "temperature": 0}
    async with httpx.AsyncClient(base_url=gen_server.url, timeout=60) as http:
        rs = await asyncio.gather(*(http.post("/v1/completions", json=body) for _ in range(16)))
    codes = [r.status_code for r in rs]
    assert set(codes) <= {200, 429} and 429 in codes and 200 in codes, codes
    for r in rs:
        if r.status_code == 429:
            assert int(r.headers["Retry-After"]) >= 1 and r.json()["error"]["code"] == "queue_full"
        else:  # every admitted request ran to its full length, with the same greedy text
            assert r.json()["usage"]["completion_tokens"] == 40
    texts = {r.json()["choices"][0]["text"] for r in rs if r.status_code == 200}
    assert len(texts) == 1


def test_rails_block_rewrite_and_stop(client, reference):
    blocked = client.completions.create(
        model="demo-lm", prompt="tell me the admin Password", max_tokens=8, extra_body={"rails": "rails"}
    )
    assert blocked.choices[0].text == "I cannot help with passwords."
    assert blocked.choices[0].finish_reason == "content_filter"
    stopped = client.completions.create(
        model="demo-lm", prompt="Romeo:\n", max_tokens=30, temperature=0, extra_body={"rails": "rails"}
    )
    full = reference("Romeo:\n", 30)
    assert stopped.choices[0].finish_reason == "content_filter"
    assert stopped.choices[0].text.endswith(" [cut]")
    assert full.text.startswith(stopped.choices[0].text[: -len(" [cut]")])
    rewritten = client.completions.create(
        model="demo-lm", prompt="ROMEO AND JULIET", max_tokens=3, temperature=0, extra_body={"rails": "rails"}
    )
    assert rewritten.choices[0].text == reference("romeo and juliet", 3).text
    stream = client.completions.create(
        model="demo-lm", prompt="ROMEO:\n", max_tokens=12, temperature=0, stream=True, extra_body={"rails": "upper"}
    )
    text = "".join(c.choices[0].text for c in stream if c.choices)
    assert text == reference("ROMEO:\n", 12).text.upper()
    with pytest.raises(openai.NotFoundError):
        client.completions.create(model="demo-lm", prompt="x", max_tokens=2, extra_body={"rails": "no_such_kb"})


def test_rails_redact_whole_words_while_streaming(client, reference):
    want = reference("ROMEO:\n", 30).text
    assert "not" in want  # the greedy text of the demo LM for this prompt
    stream = client.completions.create(
        model="demo-lm", prompt="ROMEO:\n", max_tokens=30, temperature=0, stream=True, extra_body={"rails": "redact"}
    )
    deltas = [c.choices[0].text for c in stream if c.choices]
    assert "".join(deltas) == want.replace("not", "[x]")
    assert all(d[-1].isspace() for d in deltas[:-1] if d)  # released in whole words
