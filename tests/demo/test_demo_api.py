"""The demo through the REST API: a digits prediction, and the demo LM with `demo_rails` as rails."""

from __future__ import annotations

import time

import pytest
from fastapi.testclient import TestClient

from workbench.demo.digits_data import heldout_sequences


@pytest.fixture(scope="module")
def client(wb):
    from api.app import create_app
    from neural.generation import DEMO_LM_DIR
    from workbench.serving import Serving

    if not (DEMO_LM_DIR / "config.json").is_file():
        pytest.skip(f"no demo LM at {DEMO_LM_DIR}")
    serving = Serving(wb, settings=wb.settings, load_models=["demo-digits"], serve_demo_lm=True)
    with TestClient(create_app(serving=serving, settings=wb.settings)) as c:
        deadline = time.monotonic() + 300
        while c.get("/readyz").status_code != 200:
            assert time.monotonic() < deadline, c.get("/readyz").text
            time.sleep(0.5)
        yield c


def test_predict_demo_digits_over_http(client):
    seq = heldout_sequences(limit=2)[1]  # the model misreads one digit; the checksum rules correct it
    r = client.post("/v1/pipelines/demo_digits/predict", json={"input": seq.to_input(), "explain": True})
    assert r.status_code == 200, r.text
    body = r.json()
    outputs = body["outputs"] if "outputs" in body else body["results"][0]["outputs"]
    assert outputs["action"] == "corrected" and outputs["number"] == seq.number


def test_completions_with_demo_rails(client):
    blocked = client.post(
        "/v1/completions",
        json={
            "model": "demo-lm",
            "prompt": "Pay to card 4539 1488 0343 6467\nROMEO:\n",
            "max_tokens": 20,
            "rails": "demo_rails",
        },
    )
    assert blocked.status_code == 200, blocked.text
    choice = blocked.json()["choices"][0]
    assert choice["finish_reason"] == "content_filter" and "card numbers" in choice["text"]
    ok = client.post(
        "/v1/completions",
        json={
            "model": "demo-lm",
            "prompt": "JULIET:\nO Romeo, Romeo,",
            "max_tokens": 150,
            "temperature": 0,
            "rails": "demo_rails",
        },
    )
    assert ok.status_code == 200, ok.text
    text = ok.json()["choices"][0]["text"]
    assert (
        len(text.replace(" ...", "").replace(" [stopped: content policy]", "").split()) <= 61
    )  # the length rail (per-token deltas: one word may be cut)


def test_integer_pixels_are_converted_to_the_model_dtype(client):
    """Regression (shared/cases/newcomer/digits_int_pixels.sh): integer pixel values (valid for the
    pipeline's schema; `jq` writes 0.0 as 0) failed inside the model with `dtype int64; expected
    float32` and the API answered 500. JSON numbers carry no dtype: they become the model's."""
    import json
    from pathlib import Path

    case = Path(__file__).parents[1] / "regressions" / "cases" / "newcomer" / "digits_int_pixels.json"
    as_ints = json.loads(case.read_text())
    as_floats = {**as_ints, "images": [[float(v) for v in image] for image in as_ints["images"]]}
    r_int = client.post("/v1/pipelines/demo_digits/predict", json={"input": as_ints})
    r_float = client.post("/v1/pipelines/demo_digits/predict", json={"input": as_floats})
    assert r_int.status_code == 200 and r_float.status_code == 200, (r_int.text, r_float.text)
    assert r_int.json()["outputs"] == r_float.json()["outputs"]
