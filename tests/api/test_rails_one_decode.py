"""One rails-inside-decode for both front doors: `/v1/completions` with `rails` and a pipeline's
`generate` node with `rails: {every: word}` stop at the same token and show the same text.

Both go through a real uvicorn server on 127.0.0.1 sharing one generation engine (the catalogue's
`demo-lm`, which `/v1` serves too), greedy and EOS ignored, with the same rails knowledge base.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest
from api_live import LiveServer, make_settings, serve
from replica_stream import DelayedReplicaStream

from workbench.serving import Serving

RAILS_KB = """
(deftemplate prompt (slot text))
(deftemplate completion (slot text) (slot delta) (slot tokens) (slot finished))
(deftemplate rail (slot action) (slot text (default "")) (slot reason (default "")))

(defrule stop-after-seven-tokens
  (completion (tokens ?n&:(>= ?n 7)) (finished FALSE))
  =>
  (assert (rail (action stop) (text " [cut]") (reason "length policy"))))
"""

REPLACE_KB = """
(deftemplate prompt (slot text))
(deftemplate completion (slot text) (slot delta) (slot tokens) (slot finished))
(deftemplate rail (slot action) (slot text (default "")) (slot reason (default "")))
(defrule start-over (completion) => (assert (rail (action replace) (text "x"))))
"""

PIPELINE = """
name: railed
nodes:
  - id: request
    type: input
    schema: {type: object, required: [prompt], properties: {prompt: {type: string}}}
  - id: generate
    type: generate
    model: demo-lm
    prompt: '{input.prompt}'
    max_tokens: 40
    temperature: 0
    ignore_eos: true
    rails: {knowledge_base: stop7, every: word}
  - id: result
    type: output
    fields: {text: generate.text, finish_reason: generate.finish_reason, usage: generate.usage}
edges:
  - {from: request, to: generate}
  - {from: generate, to: result}
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory, demo_lm_dir) -> Iterator[LiveServer]:
    from workbench.workbench import Workbench

    tmp = tmp_path_factory.mktemp("rails1")
    (tmp / "kb").mkdir()
    (tmp / "kb" / "stop7.clp").write_text(RAILS_KB)
    (tmp / "kb" / "replace.clp").write_text(REPLACE_KB)
    (tmp / "pipelines").mkdir()
    (tmp / "pipelines" / "railed.yaml").write_text(PIPELINE)
    (tmp / "catalog.yaml").write_text(
        f"""models:
  - name: demo-lm
    format: hf
    path: {demo_lm_dir}
    task: causal-lm
    engine: {{max_num_seqs: 8, num_kv_blocks: 96, max_model_len: 512, num_threads: 1}}
"""
    )
    settings = make_settings(tmp)
    wb = Workbench(
        settings, knowledge_base_dir=tmp / "kb", pipeline_dir=tmp / "pipelines", model_catalog=tmp / "catalog.yaml"
    )
    serving = Serving(wb, settings=settings, load_models=False, serve_demo_lm=True)
    srv = serve(serving, settings)
    srv.serving = serving
    yield srv
    srv.stop()
    wb.close()


def test_openai_rails_and_the_generate_node_stop_at_the_same_token(server) -> None:
    prompt = "ROMEO:\n"
    with httpx.Client(base_url=server.url, timeout=120) as http:
        full = http.post(
            "/v1/completions",
            json={"model": "demo-lm", "prompt": prompt, "max_tokens": 40, "temperature": 0, "ignore_eos": True},
        ).json()
        completion = http.post(
            "/v1/completions",
            json={
                "model": "demo-lm",
                "prompt": prompt,
                "max_tokens": 40,
                "temperature": 0,
                "ignore_eos": True,
                "rails": "stop7",
            },
        )
        run = http.post("/v1/pipelines/railed/predict", json={"input": {"prompt": prompt}})
    assert completion.status_code == 200, completion.text
    assert run.status_code == 200, run.text
    choice, usage = completion.json()["choices"][0], completion.json()["usage"]
    outputs = run.json()["outputs"]
    assert choice["finish_reason"] == "content_filter" and outputs["finish_reason"] == "rail_stop"
    # the same check points (whole words) and the same verdict: stopped at the same token, same text
    assert usage["completion_tokens"] == outputs["usage"]["completion_tokens"]
    assert 7 <= usage["completion_tokens"] < 40
    assert choice["text"] == outputs["text"]
    kept = choice["text"].removesuffix(" [cut]")
    assert kept != choice["text"] and full["choices"][0]["text"].startswith(kept) and kept[-1].isspace()


def test_openai_rails_refuse_replace_which_a_stream_cannot_take_back(server) -> None:
    body = {"model": "demo-lm", "prompt": "ROMEO:\n", "max_tokens": 4, "temperature": 0, "rails": "replace"}
    answer = httpx.post(server.url + "/v1/completions", json=body, timeout=120)
    assert answer.status_code == 500, answer.text
    error = answer.json()["error"]
    assert error["code"] == "execution_failed"
    assert "rail action 'replace'" in error["message"] and "stop" in error["message"]


def test_openai_rails_stop_answers_the_same_text_and_usage_when_the_steps_arrive_merged(server, monkeypatch) -> None:
    """Through a Ray replica's stream the engine's steps arrive merged and late (here every 80 ms): the rails
    still judge them word by word, and a stop counts the tokens up to the cut, as in one process."""
    body = {"model": "demo-lm", "prompt": "ROMEO:\n", "max_tokens": 40, "temperature": 0, "ignore_eos": True}
    body["rails"] = "stop7"
    with httpx.Client(base_url=server.url, timeout=120) as http:
        direct = http.post("/v1/completions", json=body)
        delayed = DelayedReplicaStream(server.serving._engines["demo-lm"], 0.08)
        monkeypatch.setitem(server.serving._engines, "demo-lm", delayed)
        late = http.post("/v1/completions", json=body)
        streamed = http.post(
            "/v1/completions", json={**body, "stream": True, "stream_options": {"include_usage": True}}
        )
    assert direct.status_code == late.status_code == streamed.status_code == 200, (late.text, streamed.text)
    assert delayed.merged > 0  # the steps did arrive merged
    assert late.json()["choices"] == direct.json()["choices"]
    assert late.json()["usage"] == direct.json()["usage"]
    assert direct.json()["choices"][0]["finish_reason"] == "content_filter"
    events = [json.loads(line[6:]) for line in streamed.text.splitlines() if line.startswith("data: {")]
    assert "".join(e["choices"][0]["text"] for e in events if e["choices"]) == direct.json()["choices"][0]["text"]
    assert events[-1]["usage"] == direct.json()["usage"]
