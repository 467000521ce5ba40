"""Regressions (n10 #10, #11), KServe v2 over a real uvicorn server on 127.0.0.1:

- #10: the 404 for an unknown model ("no model named 'nope'; known: ...") named only the tensor
  models, not the generation model (demo-lm) that `GET /v2/models/demo-lm` serves.
- #11: after `POST /v2/repository/models/demo-digits/unload`, the next infer answered 503 "model is
  loading; retry shortly" and loaded the model again behind the operator's back. Triton with explicit
  model control answers NOT_FOUND (HTTP 404) "... has no available versions" and keeps the model
  unloaded until a load request; so does the server now (ready: 400, as Triton's ready endpoint).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "api"))
from api_live import API_KEY, ROOT, LiveServer, make_settings, serve  # noqa: E402

from workbench.serving import Serving  # noqa: E402

KEY = {"Authorization": f"Bearer {API_KEY}"}


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[LiveServer]:
    """demo-digits (ONNX) from a catalogue, loaded at start-up, and the demo LM served as demo-lm."""
    from workbench.workbench import Workbench

    tmp = tmp_path_factory.mktemp("kserve-unload")
    (tmp / "catalog.yaml").write_text(
        "models:\n"
        f"  - {{name: demo-digits, format: onnx, path: {ROOT / 'models' / 'digits' / 'model.onnx'}, "
        "task: classification}\n"
    )
    settings = make_settings(tmp, api_keys=[API_KEY])
    wb = Workbench(
        settings, knowledge_base_dir=tmp / "kb", pipeline_dir=tmp / "pipelines", model_catalog=tmp / "catalog.yaml"
    )
    live = serve(Serving(wb, settings=settings, load_models=True, serve_demo_lm=True), settings)
    yield live
    live.stop()
    wb.close()


def _infer_body(server: LiveServer) -> dict:
    meta = httpx.get(server.url + "/v2/models/demo-digits").json()
    (spec,) = meta["inputs"]
    shape = [1, *[d if d > 0 else 1 for d in spec["shape"][1:]]]  # one row; dynamic axes of length 1
    size = 1
    for d in shape:
        size *= d
    return {"inputs": [{"name": spec["name"], "shape": shape, "datatype": spec["datatype"], "data": [0.0] * size}]}


def test_unknown_model_404_names_the_generation_models_too(server):
    assert httpx.get(server.url + "/v2/models/demo-lm").status_code == 200
    for path in ("/v2/models/nope", "/v2/models/nope/versions/1", "/v2/models/nope/infer"):
        r = (
            httpx.post(server.url + path, json={"inputs": []})
            if path.endswith("infer")
            else httpx.get(server.url + path)
        )
        assert r.status_code == 404, (path, r.text)
        message = r.json()["error"]
        assert message.startswith("no model named 'nope'; known: "), message
        assert "demo-digits" in message and "demo-lm" in message, message


def test_an_unloaded_model_stays_unloaded_until_a_load_request(server):
    body = _infer_body(server)
    infer = server.url + "/v2/models/demo-digits/infer"
    assert httpx.post(infer, json=body).status_code == 200
    assert httpx.post(server.url + "/v2/repository/models/demo-digits/unload", headers=KEY).status_code == 200

    for _ in range(3):  # before the fix: 503 "is loading", and the model was back a moment later
        r = httpx.post(infer, json=body)
        assert r.status_code == 404, r.text
        assert r.json()["error"] == (
            "model 'demo-digits' has no available versions: it was unloaded; "
            "POST /v2/repository/models/demo-digits/load loads it again"
        )
        assert httpx.get(server.url + "/v2/models/demo-digits/ready").status_code == 400
        time.sleep(0.5)
    index = {m["name"]: m for m in httpx.post(server.url + "/v2/repository/index").json()}
    assert index["demo-digits"]["state"] == "UNAVAILABLE" and index["demo-digits"]["reason"] == "unloaded"
    status = {m["name"]: m for m in httpx.get(server.url + "/v1/served-models").json()["models"]}
    assert not status["demo-digits"]["loaded"]

    assert httpx.post(server.url + "/v2/repository/models/demo-digits/load", headers=KEY).status_code == 200
    assert httpx.get(server.url + "/v2/models/demo-digits/ready").status_code == 200
    assert httpx.post(infer, json=body).status_code == 200
