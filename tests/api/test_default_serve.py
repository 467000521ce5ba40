"""What a fresh `workbench serve` answers with its default configuration (the repository's model
catalogue loaded at start-up, the demo LM served by the generation engine), over a real uvicorn
server on 127.0.0.1: model status routes say what is true, for tensor and generation models alike."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import httpx
import pytest
from api_live import ROOT, LiveServer, make_settings, serve

from workbench.serving import Serving


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[LiveServer]:
    from neural.generation import DEMO_LM_DIR

    if not (DEMO_LM_DIR / "config.json").is_file():
        pytest.skip(f"no demo LM at {DEMO_LM_DIR}")
    tmp = tmp_path_factory.mktemp("default-serve")
    shutil.copytree(ROOT / "knowledge_bases", tmp / "knowledge_bases")  # uploads must not land in the repository
    shutil.copytree(ROOT / "pipelines", tmp / "pipelines")
    settings = make_settings(tmp, knowledge_base_dir=tmp / "knowledge_bases", pipeline_dir=tmp / "pipelines")
    live = serve(Serving(settings=settings), settings)  # otherwise the defaults `workbench serve` uses
    yield live
    live.stop()


def _generate(server: LiveServer) -> None:
    r = httpx.post(
        server.url + "/v1/completions",
        json={"model": "demo-lm", "prompt": "ROMEO:", "max_tokens": 4, "temperature": 0},
        timeout=120,
    )
    assert r.status_code == 200, r.text


def test_served_models_lists_the_demo_lm_as_ready_before_and_after_use(server):
    ready = httpx.get(server.url + "/readyz").json()
    assert ready["models"]["demo-lm"] is True
    for _ in range(2):
        r = httpx.get(server.url + "/v1/served-models")
        assert r.status_code == 200, r.text
        models = {m["name"]: m for m in r.json()["models"]}
        lm = models["demo-lm"]
        assert lm["kind"] == "generation" and lm["state"] == "READY" and lm["loaded"]
        assert lm["version"] and len(lm["version"]) == 12
        assert models["demo-digits"]["kind"] == "tensor" and models["demo-digits"]["state"] == "READY"
        _generate(server)


def test_kserve_model_routes_answer_for_the_generation_model(server):
    _generate(server)
    meta = httpx.get(server.url + "/v2/models/demo-lm")
    assert meta.status_code == 200, meta.text
    doc = meta.json()
    assert doc["inputs"] == [{"name": "text_input", "datatype": "BYTES", "shape": [1]}]
    assert doc["outputs"][0]["name"] == "text_output" and doc["parameters"]["task"] == "causal-lm"
    version = doc["versions"][0]
    assert httpx.get(server.url + "/v2/models/demo-lm/ready").status_code == 200
    assert httpx.get(server.url + f"/v2/models/demo-lm/versions/{version}/ready").status_code == 200
    index = {m["name"]: m for m in httpx.post(server.url + "/v2/repository/index", json={}).json()}
    assert index["demo-lm"] == {"name": "demo-lm", "version": version, "state": "READY", "reason": ""}
    assert index["demo-digits"]["state"] == "READY"
    infer = httpx.post(
        server.url + "/v2/models/demo-lm/infer",
        json={"inputs": [{"name": "text_input", "datatype": "BYTES", "shape": [1], "data": ["hi"]}]},
    )
    assert infer.status_code == 400 and "/v2/models/demo-lm/generate" in infer.json()["error"]


# ---- numbers that do not fit the model's float32 input ---------------------------------------------
RAWDIG = """name: rawdig
nodes:
  - id: scan
    type: input
    schema:
      type: object
      required: [images]
      properties:
        images: {type: array, items: {type: array, minItems: 64, maxItems: 64, items: {type: number}}}
  - id: read
    type: model
    model: demo-digits
    inputs: {pixels: "input.images"}
  - id: result
    type: output
    fields:
      logits: "read.logits"
edges:
  - {from: scan, to: read}
  - {from: read, to: result}
"""


def test_kserve_refuses_fp64_values_beyond_float32_by_input_and_index(server):
    data = [0.0] * 5 + [1e39] + [0.0] * 58
    r = httpx.post(
        server.url + "/v2/models/demo-digits/infer",
        json={"inputs": [{"name": "pixels", "datatype": "FP64", "shape": [1, 1, 64], "data": data}]},
    )
    assert r.status_code == 400, r.text
    msg = r.json()["error"]
    assert "'pixels'" in msg and "[0, 0, 5]" in msg and "float32" in msg and "1e+39" in msg
    ok = httpx.post(
        server.url + "/v2/models/demo-digits/infer",
        json={"inputs": [{"name": "pixels", "datatype": "FP64", "shape": [1, 1, 64], "data": [3.0e38] + [0.0] * 63}]},
    )
    assert ok.status_code == 200, ok.text  # within float32's range: converted


def test_a_non_finite_model_output_is_written_as_a_protobuf_json_string(server):
    # 3e38 fits float32; the MLP's sums of such pixels overflow to inf and inf - inf to NaN
    r = httpx.post(
        server.url + "/v2/models/demo-digits/infer",
        json={"inputs": [{"name": "pixels", "datatype": "FP32", "shape": [1, 1, 64], "data": [3.0e38] * 64}]},
    )
    assert r.status_code == 200, r.text
    assert b"NaN," not in r.content and b"Infinity," not in r.content.replace(b'"Infinity"', b"")
    logits = r.json()["outputs"][0]["data"]  # strict JSON parser: the bare NaN literal would not parse
    assert any(v in ("NaN", "Infinity", "-Infinity") for v in logits), logits


def test_a_model_node_refuses_pipeline_values_beyond_float32_naming_node_input_and_index(server):
    put = httpx.put(server.url + "/v1/pipelines/rawdig", content=RAWDIG, headers={"Content-Type": "application/yaml"})
    assert put.status_code in (200, 201), put.text
    images = [[1.0] * 64, [0.0] * 7 + [1e300] + [0.0] * 56]
    r = httpx.post(server.url + "/v1/pipelines/rawdig/predict", json={"input": {"images": images}}, timeout=60)
    assert r.status_code in (400, 422), r.text
    text = r.text
    assert "read" in text and "'pixels'" in text and "[1, 7]" in text and "float32" in text, text


# ---- Content-Type of JSON-body routes ---------------------------------------------------------------
@pytest.mark.parametrize("ctype", ["text/plain", "application/xml", "application/x-www-form-urlencoded"])
@pytest.mark.parametrize("path", ["/v1/pipelines/demo_digits/predict", "/v1/kb/family/check", "/v1/completions"])
def test_a_json_route_answers_415_for_another_content_type(server, ctype, path):
    r = httpx.post(server.url + path, content=b"{}", headers={"Content-Type": ctype})
    assert r.status_code == 415, r.text
    err = r.json()["error"]
    assert err["code"] == "unsupported_media_type" and repr(ctype) in err["message"]
    assert "application/json" in err["message"]


def test_json_routes_still_take_json_with_or_without_a_charset_and_without_a_type(server):
    seq = {"images": [[0.0] * 64]}
    for headers in ({"Content-Type": "application/json; charset=utf-8"}, {}):
        r = httpx.post(server.url + "/v1/pipelines/demo_digits/validate", content=b'{"input": {}}', headers=headers)
        assert r.status_code != 415, r.text
    r = httpx.post(server.url + "/v1/pipelines/demo_digits/predict", json={"input": seq})
    assert r.status_code != 415, r.text
    kb = httpx.put(server.url + "/v1/kb/q10_text", content=b"(deffacts f (a))", headers={"Content-Type": "text/plain"})
    assert kb.status_code in (200, 201), kb.text  # text routes keep their own types


# ---- HEAD ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("path", ["/healthz", "/readyz", "/metrics", "/v1/served-models"])
def test_head_answers_like_get_without_a_body(server, path):
    get = httpx.get(server.url + path)
    head = httpx.head(server.url + path)
    assert head.status_code == get.status_code == 200
    assert head.content == b""
    assert head.headers["content-type"] == get.headers["content-type"]


# ---- no absolute server path in an answer -------------------------------------------------------------
def test_a_missing_knowledge_base_is_reported_without_server_paths(server):
    import os

    r = httpx.get(server.url + "/v1/kb/FAMILY")
    assert r.status_code == 404, r.text
    message = r.json()["error"]["message"]
    assert "FAMILY" in message and os.getcwd() not in message and "/tmp" not in message, message
    assert not any(part.startswith("/") for part in message.replace(",", " ").split()), message
    check = httpx.post(server.url + "/v1/kb/FAMILY/check", json={"facts": []})
    assert "/tmp" not in check.text and os.getcwd() not in check.text, check.text


# ---- messages -------------------------------------------------------------------------------------------
def _post_raw(server: LiveServer, path: str, raw: bytes) -> httpx.Response:
    return httpx.post(server.url + path, content=raw, headers={"Content-Type": "application/json"}, timeout=60)


IMAGE = b"[" + b",".join([b"0"] * 64) + b"]"


def test_a_number_too_large_for_a_float_is_said_as_such(server):
    r = _post_raw(server, "/v1/pipelines/demo_digits/predict", b'{"input": {"images": [[1e400' + IMAGE[2:] + b"]}}")
    assert r.status_code == 422, r.text
    message = r.json()["error"]["message"]
    assert message.startswith("body.input.images[0][0]: a number too large for a float") and "inf " not in message


@pytest.mark.parametrize("value", [b"NaN", b"Infinity", b"-Infinity", b"1e400"])
@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/v1/pipelines/demo_digits/predict", b'{"input": {"images": [' + IMAGE + b']}, "timeout_s": %s}'),
        ("/v1/kb/family/run", b'{"facts": [], "timeout_s": %s}'),
        ("/v1/completions", b'{"model": "demo-lm", "prompt": "a", "max_tokens": 1, "temperature": %s}'),
    ],
)
def test_non_finite_numbers_in_parameters_must_be_finite(server, value, path, body):
    r = _post_raw(server, path, body % value)
    assert r.status_code in (400, 422), r.text
    err = r.json()["error"]
    field = "temperature" if "completions" in path else "timeout_s"
    assert err["message"] == f"body.{field}: must be a finite number" and err["param"] == f"body.{field}"


@pytest.mark.parametrize("path", ["/v1/pipelines/demo_digits/predict", "/v1/kb/family/run"])
def test_a_boolean_timeout_is_refused_not_taken_as_one_second(server, path):
    body = b'{"input": {"images": [' + IMAGE + b"]}, " if "predict" in path else b'{"facts": [], '
    r = _post_raw(server, path, body + b'"timeout_s": true}')
    assert r.status_code == 422, r.text
    assert r.json()["error"]["message"] == "body.timeout_s: must be a number, not a boolean"


def test_fact_errors_of_a_knowledge_base_run_name_their_field_path(server):
    r = httpx.post(
        server.url + "/v1/kb/family/run",
        json={"facts": [{"template": "parent", "values": ["a", "b"]}, {"template": "nosuch", "slots": {}}]},
    )
    assert r.status_code == 422, r.text
    err = r.json()["error"]
    assert err["param"] == "body.facts[1]" and err["message"].startswith("body.facts[1]: template 'nosuch'")


def test_no_pydantic_value_error_prefix_in_messages(server):
    r = httpx.post(server.url + "/v1/pipelines/demo_digits/predict", json={})  # neither input nor inputs
    assert r.status_code == 422, r.text
    text = r.text
    assert "Value error" not in text and "body" in r.json()["error"]["message"]
