"""`POST /v1/pipelines/{name}/predict` with `"stream": true`: server-sent events from a real uvicorn
server running demo_generate (the demo LM behind rails) on the real generation engine."""

from __future__ import annotations

import json
import shutil

import httpx
import pytest
from api_live import ROOT, make_settings, serve

from workbench.serving import Serving


@pytest.fixture(scope="module")
def server(tmp_path_factory, demo_lm_dir):
    from workbench.workbench import Workbench

    tmp = tmp_path_factory.mktemp("stream")
    (tmp / "kb").mkdir()
    (tmp / "pipelines").mkdir()
    shutil.copy(ROOT / "knowledge_bases" / "demo_rails.clp", tmp / "kb" / "demo_rails.clp")
    shutil.copy(ROOT / "pipelines" / "demo_generate.yaml", tmp / "pipelines" / "demo_generate.yaml")
    (tmp / "catalog.yaml").write_text(
        f"models:\n  - {{name: demo-lm, format: hf, path: {demo_lm_dir}, task: causal-lm,"
        " engine: {max_num_seqs: 8, num_kv_blocks: 96, max_model_len: 512, num_threads: 1}}\n"
    )
    settings = make_settings(tmp)
    wb = Workbench(
        settings, knowledge_base_dir=tmp / "kb", pipeline_dir=tmp / "pipelines", model_catalog=tmp / "catalog.yaml"
    )
    srv = serve(Serving(wb, settings=settings, load_models=False, serve_demo_lm=False), settings)
    yield srv
    srv.stop()
    wb.close()


def _events(r: httpx.Response) -> list[tuple[str, dict]]:
    out = []
    for block in r.text.split("\n\n"):
        if not block.strip():
            continue
        lines = dict(line.split(": ", 1) for line in block.split("\n"))
        out.append((lines["event"], json.loads(lines["data"])))
    return out


def test_stream_gives_node_text_rail_and_result_events(server):
    body = {"input": {"prompt": "ROMEO:\n", "seed": 2}, "stream": True}
    with httpx.Client(timeout=120) as c:
        r = c.post(server.url + "/v1/pipelines/demo_generate/predict", json=body)
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
    events = _events(r)
    kinds = [k for k, _ in events]
    assert kinds[-1] == "result"
    run = events[-1][1]["run"]
    assert run["status"] == "succeeded" and run["run_id"]
    assert "".join(e["delta"] for k, e in events if k == "text") == run["outputs"]["text"]
    assert [e["node"] for k, e in events if k == "node"] == ["request", "input_rail", "generate", "result"]
    if run["outputs"]["outcome"] == "stopped":
        assert kinds.count("rail") >= 1 and [e for k, e in events if k == "rail"][-1]["action"] == "stop"
    # the same input without streaming gives the same outputs (same seed)
    plain = httpx.post(server.url + "/v1/pipelines/demo_generate/predict", json={"input": body["input"]}, timeout=120)
    assert plain.json()["outputs"] == run["outputs"]


def test_stream_errors_before_the_run_answer_as_usual(server):
    r = httpx.post(server.url + "/v1/pipelines/demo_generate/predict", json={"input": {"nope": 1}, "stream": True})
    assert r.status_code == 422 and r.json()["error"]["code"] == "validation_failed"
    r = httpx.post(
        server.url + "/v1/pipelines/demo_generate/predict", json={"inputs": [{"prompt": "x"}], "stream": True}
    )
    assert r.status_code == 422 and "stream" in r.json()["error"]["message"]
    r = httpx.post(server.url + "/v1/pipelines/missing/predict", json={"input": {}, "stream": True})
    assert r.status_code == 404
