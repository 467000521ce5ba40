"""KServe v2 (Open Inference Protocol) over a real uvicorn server, driven by tritonclient[http]."""

from __future__ import annotations

import gzip
import json

import httpx
import numpy as np
import onnxruntime as ort
import pytest
import tritonclient.http as triton
from api_live import DIGITS_ONNX
from tritonclient.utils import InferenceServerException


@pytest.fixture(scope="module")
def client(model_server):
    c = triton.InferenceServerClient(model_server.host_port)
    yield c
    c.close()


@pytest.fixture(scope="module")
def reference():
    sess = ort.InferenceSession(str(DIGITS_ONNX), providers=["CPUExecutionProvider"])
    return lambda x: sess.run(["logits"], {"pixels": x})[0]


def test_server_metadata_and_health(client):
    assert client.is_server_live()
    assert client.is_server_ready()
    meta = client.get_server_metadata()
    assert meta["name"] == "workbench"
    assert "binary_tensor_data" in meta["extensions"]


def test_repository_index(client, model_registry):
    index = client.get_model_repository_index()
    tensor = {e.name for e in model_registry.list()}
    assert {(m["name"], m["version"], m["state"]) for m in index if m["name"] in tensor} == {
        (e.name, e.short_version, "READY") for e in model_registry.list()
    }
    # the generation models (the demo LM, served by default) are listed READY too
    assert all(m["state"] == "READY" for m in index if m["name"] not in tensor)


def test_model_metadata_and_readiness(client, model_registry):
    meta = client.get_model_metadata("digits")
    entry = model_registry.get("digits")
    assert meta["name"] == "digits"
    assert meta["versions"] == [entry.short_version]
    # the digits model reads a sequence of 8x8 images per row: [batch, digits, 64]
    assert meta["inputs"] == [{"name": "pixels", "datatype": "FP32", "shape": [-1, -1, 64]}]
    assert meta["outputs"] == [{"name": "logits", "datatype": "FP32", "shape": [-1, -1, 10]}]
    assert client.get_model_metadata("digits", model_version=entry.short_version)["name"] == "digits"
    assert client.is_model_ready("digits")
    assert client.is_model_ready("digits", model_version=entry.short_version)
    text = client.get_model_metadata("minilm")
    assert text["inputs"] == [{"name": "text", "datatype": "BYTES", "shape": [-1]}]
    assert text["outputs"][0]["shape"] == [-1, 384]


@pytest.mark.parametrize("binary", [False, True], ids=["json", "binary"])
def test_infer_digits_matches_onnxruntime(client, digits_data, reference, binary):
    x, labels = digits_data
    batch = x[:21].reshape(7, 3, 64)  # 7 rows of 3 digits each
    inp = triton.InferInput("pixels", list(batch.shape), "FP32")
    inp.set_data_from_numpy(batch, binary_data=binary)
    out = triton.InferRequestedOutput("logits", binary_data=binary)
    res = client.infer("digits", [inp], outputs=[out], request_id="r-1", parameters={"some_unknown_knob": 3})
    got = res.as_numpy("logits")
    assert got.shape == (7, 3, 10)
    np.testing.assert_allclose(got, reference(batch), rtol=1e-5, atol=1e-5)
    assert res.get_response()["id"] == "r-1"
    assert (got.reshape(21, 10).argmax(1) == labels[:21]).mean() >= 0.8  # a trained model on real digits


def test_infer_default_outputs_are_binary(client, digits_data, reference):
    x, _ = digits_data
    batch = x[10:13].reshape(3, 1, 64)
    inp = triton.InferInput("pixels", [3, 1, 64], "FP32")
    inp.set_data_from_numpy(batch)  # binary in, no outputs named: the client asks binary_data_output
    res = client.infer("digits", [inp])
    np.testing.assert_allclose(res.as_numpy("logits"), reference(batch), rtol=1e-5, atol=1e-5)


def test_infer_text_model_bytes_tensor(client, model_registry):
    texts = ["The cat sat on the mat.", "Réseau neuronal — naïve café", "rules gate model calls"]
    inp = triton.InferInput("text", [3], "BYTES")
    inp.set_data_from_numpy(np.array([t.encode() for t in texts], dtype=object))
    res = client.infer("minilm", [inp])
    got = res.as_numpy("sentence_embedding")
    # the runner's own unbatched path (itself checked against sentence-transformers in tests/neural)
    want = model_registry.get("minilm").runner.encode(texts)
    assert got.shape == (3, 384)
    np.testing.assert_allclose(got, want, atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)


def test_infer_json_over_plain_http_and_gzip(model_server, digits_data, reference):
    x, _ = digits_data
    batch = x[:2].reshape(2, 1, 64)
    body = {
        "inputs": [{"name": "pixels", "shape": [2, 1, 64], "datatype": "FP32", "data": batch.tolist()}],
        "parameters": {"anything": "ignored"},
    }
    r = httpx.post(
        model_server.url + "/v2/models/digits/infer",
        content=gzip.compress(json.dumps(body).encode()),
        headers={"Content-Encoding": "gzip", "Content-Type": "application/json"},
    )
    assert r.status_code == 200, r.text
    out = r.json()["outputs"][0]
    assert out["name"] == "logits" and out["shape"] == [2, 1, 10] and out["datatype"] == "FP32"
    np.testing.assert_allclose(np.array(out["data"]).reshape(2, 1, 10), reference(batch), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    "body, fragment",
    [
        (
            {"inputs": [{"name": "pixels", "shape": [1, 1, 63], "datatype": "FP32", "data": [0.0] * 63}]},
            "axis 2 has size 63",
        ),
        ({"inputs": [{"name": "pixels", "shape": [1, 64], "datatype": "FP32", "data": [0.0] * 64}]}, "rank 2"),
        (
            {"inputs": [{"name": "pixels", "shape": [1, 1, 64], "datatype": "FP32", "data": [0.0] * 10}]},
            "10 elements for shape [1, 1, 64]",
        ),
        (
            {"inputs": [{"name": "image", "shape": [1, 1, 64], "datatype": "FP32", "data": [0.0] * 64}]},
            "missing input 'pixels'",
        ),
        (
            {"inputs": [{"name": "pixels", "shape": [1, 1, 64], "datatype": "BYTES", "data": ["a"] * 64}]},
            "datatype BYTES; expected FP32",
        ),
        (
            {"inputs": [{"name": "pixels", "shape": [1, 1, 64], "datatype": "FP99", "data": [0] * 64}]},
            "'FP99' is not one of",
        ),
        ({"inputs": []}, "inputs: must be a non-empty list"),
        (
            {
                "inputs": [{"name": "pixels", "shape": [1, 1, 64], "datatype": "FP32", "data": [0.0] * 64}],
                "outputs": [{"name": "probs"}],
            },
            "unknown requested output 'probs'",
        ),
    ],
)
def test_infer_errors_are_400_with_message(model_server, body, fragment):
    r = httpx.post(model_server.url + "/v2/models/digits/infer", json=body)
    assert r.status_code == 400
    assert set(r.json()) == {"error"} and fragment in r.json()["error"], r.json()


def test_unknown_model_and_version_are_404(client, model_server):
    with pytest.raises(InferenceServerException) as e:
        client.get_model_metadata("nope")
    assert e.value.status() == "404" and "no model named 'nope'" in e.value.message()
    r = httpx.get(model_server.url + "/v2/models/digits/versions/ffffffff")
    assert r.status_code == 404 and "version" in r.json()["error"]
    r = httpx.post(model_server.url + "/v2/models/nope/infer", json={"inputs": []})
    assert r.status_code == 404 and set(r.json()) == {"error"}
    assert httpx.get(model_server.url + "/v2/models/nope/ready").status_code == 404


def test_binary_sizes_that_do_not_add_up_are_rejected(model_server):
    head = json.dumps(
        {
            "inputs": [
                {"name": "pixels", "shape": [1, 1, 64], "datatype": "FP32", "parameters": {"binary_data_size": 256}}
            ]
        }
    ).encode()
    r = httpx.post(
        model_server.url + "/v2/models/digits/infer",
        content=head + b"\0" * 100,
        headers={"Inference-Header-Content-Length": str(len(head))},
    )
    assert r.status_code == 400 and "binary_data_size=256" in r.json()["error"]


def test_catalogue_model_loads_on_first_use(tmp_path):
    """A catalogue model not loaded at start-up answers 503 (Retry-After) while it loads, then serves."""
    import time

    from api_live import LiveServer, make_settings

    from api.app import create_app
    from workbench.serving import Serving
    from workbench.workbench import Workbench

    (tmp_path / "catalog.yaml").write_text(
        f"models:\n  - name: lazy-digits\n    format: onnx\n    path: {DIGITS_ONNX}\n    task: classification\n"
    )
    settings = make_settings(tmp_path)
    wb = Workbench(
        settings, knowledge_base_dir=tmp_path, pipeline_dir=tmp_path, model_catalog=tmp_path / "catalog.yaml"
    )
    server = LiveServer(
        create_app(serving=Serving(wb, settings=settings, load_models=False, serve_demo_lm=False), settings=settings)
    ).start()
    try:
        index = {m["name"]: m for m in httpx.post(server.url + "/v2/repository/index").json()}
        assert index["lazy-digits"]["state"] == "UNAVAILABLE"
        r = httpx.get(server.url + "/v2/models/lazy-digits")
        assert r.status_code == 503 and "loading" in r.json()["error"] and int(r.headers["Retry-After"]) >= 1
        deadline = time.monotonic() + 60
        while (
            r := httpx.get(server.url + "/v2/models/lazy-digits")
        ).status_code == 503 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert r.status_code == 200 and r.json()["inputs"][0]["name"] == "pixels"
        assert httpx.get(server.url + "/v2/models/lazy-digits/ready").status_code == 200
    finally:
        server.stop()
        wb.close()


def test_generate_on_a_one_shot_model_names_the_route_it_answers(model_server):
    """n16: `POST /v2/models/digits/generate` answered 404 "no model named 'digits'" although
    `GET /v2/models/digits` is 200."""
    r = httpx.post(f"{model_server.url}/v2/models/digits/generate", json={"text_input": "hi"}, timeout=60)
    assert r.status_code == 400, r.text
    assert r.json()["error"].startswith(
        "model 'digits' is not a generation model: it answers POST /v2/models/digits/infer; the generation models are "
    )
    assert httpx.post(f"{model_server.url}/v2/models/nope/generate", json={"text_input": "hi"}).status_code == 404


def test_a_generate_body_that_does_not_validate_is_a_400(model_server):
    """n16: `/v2/models/NAME/generate` answered a body that does not validate 422, where every other `/v2` bad
    request is 400 (the Open Inference Protocol's), as docs/api.md says."""
    r = httpx.post(f"{model_server.url}/v2/models/digits/generate", json={"text_input": 5}, timeout=60)
    assert r.status_code == 400, r.text
    assert r.json()["error"].startswith("body.text_input: ")
