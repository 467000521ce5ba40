"""Regression (q14, found by earlier sessions): after `POST /v2/repository/models/demo-digits/unload`,
predicting a pipeline whose model node calls demo-digits loaded the model again behind the operator's
back and answered 200. Triton (explicit model control) keeps an unloaded model unloaded until a load
request, and an ensemble whose member is unloaded is not ready: its requests fail. Now the predict is
refused with 503 (code `unavailable`, the API's other "model not ready" answer), naming the model, saying
it was unloaded and how to load it; nothing is recorded and the model stays unloaded. Over a real uvicorn
server on 127.0.0.1."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "api"))
from api_live import API_KEY, ROOT, LiveServer, make_settings, served_with_demo_digits  # noqa: E402

KEY = {"Authorization": f"Bearer {API_KEY}"}

PIPELINE = """
name: read_one
nodes:
  - id: scan
    type: input
    schema:
      type: object
      required: [pixels]
      properties:
        pixels: {type: array, items: {type: number}, minItems: 64, maxItems: 64}
  - id: read
    type: model
    model: demo-digits
    inputs: {pixels: "[input.pixels]"}
    facts:
      - template: digit
        slots: {label: "argmax(logits[0])"}
  - id: result
    type: output
    fields:
      label: "digit.label"
edges:
  - {from: scan, to: read}
  - {from: read, to: result}
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[tuple[LiveServer, object]]:
    with served_with_demo_digits(tmp_path_factory.mktemp("pipeline-unloaded"), {"read_one": PIPELINE}) as served:
        yield served


def _runs(url: str) -> int:
    return len(httpx.get(url + "/v1/runs", params={"pipeline": "read_one", "limit": 100}).json()["runs"])


def test_a_pipeline_needing_an_unloaded_model_is_refused_and_does_not_reload_it(server):
    live, wb = server
    predict = live.url + "/v1/pipelines/read_one/predict"
    body = {"input": {"pixels": [0.0] * 64}}
    assert httpx.post(predict, json=body).status_code == 200, httpx.post(predict, json=body).text
    assert httpx.post(live.url + "/v2/repository/models/demo-digits/unload", headers=KEY).status_code == 200
    runs = _runs(live.url)

    for _ in range(2):  # before the fix: 200, and demo-digits was loaded again
        r = httpx.post(predict, json=body)
        assert r.status_code == 503, r.text
        error = r.json()["error"]
        assert error["code"] == "unavailable" and r.headers["retry-after"] == "30", (error, r.headers)
        assert error["message"] == (
            "pipeline 'read_one' needs model 'demo-digits' (node 'read'), which was unloaded; "
            "POST /v2/repository/models/demo-digits/load loads it again"
        )
        assert not wb.catalog.is_loaded("demo-digits")
    assert httpx.get(live.url + "/v2/models/demo-digits/ready").status_code == 400
    assert _runs(live.url) == runs  # refused, not recorded

    assert httpx.post(live.url + "/v2/repository/models/demo-digits/load", headers=KEY).status_code == 200
    r = httpx.post(predict, json=body)
    assert r.status_code == 200, r.text


def test_the_facade_refuses_an_unloaded_model_until_it_is_loaded(tmp_path):
    """The same without a server: `Workbench.run_sync` and `infer` raise ModelUnloadedError (naming the
    pipeline node), `get_model` is the explicit load."""
    from workbench.pipeline import ModelUnloadedError
    from workbench.workbench import Workbench

    (tmp_path / "catalog.yaml").write_text(
        f"models:\n  - {{name: demo-digits, format: onnx, path: {ROOT / 'models' / 'digits' / 'model.onnx'}}}\n"
    )
    (tmp_path / "pipelines").mkdir()
    (tmp_path / "pipelines" / "read_one.yaml").write_text(PIPELINE)
    wb = Workbench(
        make_settings(tmp_path),
        knowledge_base_dir=tmp_path / "kb",
        pipeline_dir=tmp_path / "pipelines",
        model_catalog=tmp_path / "catalog.yaml",
    )
    try:
        item = {"pixels": [0.0] * 64}
        assert wb.run_sync("read_one", item).status == "succeeded"
        assert wb.unload_model("demo-digits")
        with pytest.raises(ModelUnloadedError) as info:
            wb.run_sync("read_one", item)
        assert (info.value.pipeline, info.value.node, info.value.name) == ("read_one", "read", "demo-digits")
        with pytest.raises(ModelUnloadedError, match="model 'demo-digits' was unloaded"):
            wb.infer_sync("demo-digits", {"pixels": [[0.0] * 64]})
        assert not wb.catalog.is_loaded("demo-digits")
        wb.get_model("demo-digits")
        assert wb.run_sync("read_one", item).status == "succeeded"
    finally:
        wb.close()
