"""Edge cases of the request path found in review (rev14): headers that must not switch off the body
checks, names and paths ending in a newline, unknown pipeline names and the metrics' series, and
the route label of gzip-encoded and refused requests. A real uvicorn server on 127.0.0.1."""

from __future__ import annotations

import gzip
import json
import random
import string

import httpx
import numpy as np
import pytest
from api_live import ROOT

from workbench.demo.digits_data import heldout_sequences
from workbench.names import InvalidNameError, check_name

PATH = "/v1/pipelines/demo_digits/predict"
KB_DIR = ROOT / "knowledge_bases"  # the default folder, as `workbench serve` uses it
ROUTE_LINE = 'workbench_http_requests_total{{method="POST",route="/v1/pipelines/{{name}}/predict",status="{}"}}'


@pytest.fixture(scope="module")
def server(digits_server):
    return digits_server


def _input(**extra) -> dict:
    return {**heldout_sequences(length=8)[0].to_input(), **extra}


def _metric(server, line: str) -> float:
    for row in httpx.get(server.url + "/metrics", timeout=30).text.splitlines():
        if row.startswith(line + " "):
            return float(row.rsplit(" ", 1)[1])
    return 0.0


@pytest.mark.parametrize("query", ["", "?explain=false"])  # the fast path, then FastAPI's route
@pytest.mark.parametrize(
    "extra",
    [{"Inference-Header-Content-Length": "0"}, {"Inference-Header-Content-Length": "10"}, "second-content-type"],
)
def test_body_checks_hold_whatever_headers_come_along(server, query, extra):
    headers = [("Content-Type", "application/json")]
    headers += [("Content-Type", "text/plain")] if extra == "second-content-type" else list(extra.items())
    url = server.url + PATH + query
    nul = json.dumps({"input": _input(id="nul\u0000x")}).encode()
    r = httpx.post(url, content=nul, headers=headers, timeout=60)
    assert r.status_code == 422, r.text
    assert r.json()["error"]["param"] == "body.input.id"
    surrogate = json.dumps({"input": _input(id="a\ud800b")}).encode()
    r = httpx.post(url, content=surrogate, headers=headers, timeout=60)
    assert r.status_code == 422, r.text
    deep = json.dumps({"input": _input(id="x", extra=[[]])}).replace("[[]]", "[" * 150 + "]" * 150).encode()
    r = httpx.post(url, content=deep, headers=headers, timeout=60)
    assert r.status_code == 400, r.text
    assert "WORKBENCH_LIMITS__MAX_JSON_DEPTH" in r.json()["error"]["message"]
    ok = httpx.post(url, content=json.dumps({"input": _input()}).encode(), headers=headers, timeout=60)
    assert ok.status_code == 200, ok.text


def test_the_kserve_header_still_delimits_the_json_header_on_v2_infer(server):
    """On /v2 infer the header keeps its meaning: the JSON header is checked, the raw tensor bytes after
    it (not UTF-8, NULs) are not; the same body without the header is refused as bad JSON."""
    meta = httpx.get(server.url + "/v2/models/demo-digits", timeout=30).json()
    spec = meta["inputs"][0]
    shape = [1 if d < 0 else d for d in spec["shape"]]
    assert spec["datatype"] == "FP32"
    raw = np.full(shape, -1.5, dtype=np.float32).tobytes()  # 00 00 c0 bf: NUL bytes, 0xc0 is never UTF-8
    head = json.dumps({"inputs": [{**spec, "shape": shape, "parameters": {"binary_data_size": len(raw)}}]}).encode()
    url = server.url + "/v2/models/demo-digits/infer"
    r = httpx.post(url, content=head + raw, headers={"Inference-Header-Content-Length": str(len(head))}, timeout=60)
    assert r.status_code == 200, r.text
    r = httpx.post(url, content=head + raw, timeout=60)
    assert r.status_code == 400, r.text
    deep = head.replace(b'"parameters"', b'"x": ' + b"[" * 150 + b"]" * 150 + b', "parameters"')
    r = httpx.post(url, content=deep + raw, headers={"Inference-Header-Content-Length": str(len(deep))}, timeout=60)
    assert r.status_code == 400 and "WORKBENCH_LIMITS__MAX_JSON_DEPTH" in r.text, r.text


def test_names_ending_in_a_newline_are_refused(server):
    for name in ("abc\n", "abc\r", "a\nb"):
        with pytest.raises(InvalidNameError):
            check_name(name, "pipeline")
    written = KB_DIR / "zz_edge_test\n.clp"
    try:
        r = httpx.put(
            server.url + "/v1/kb/zz_edge_test%0A",
            content=b"(deftemplate a (slot x))",
            headers={"Content-Type": "text/plain"},
        )
        assert r.status_code == 404 and r.json()["error"]["code"] == "not_found", r.text  # no route ends in "\n"
        assert not written.exists()
    finally:
        written.unlink(missing_ok=True)
    for query in ("", "?explain=false"):
        r = httpx.post(server.url + PATH + "%0A" + query, json={"input": _input()}, timeout=60)
        assert r.status_code == 404, r.text
        r = httpx.post(server.url + "/v1/pipelines/demo_digits%0A/predict" + query, json={"input": _input()})
        assert r.status_code == 422 and r.json()["error"]["code"] == "validation_failed", r.text


def _series(server) -> set[str]:
    text = httpx.get(server.url + "/metrics", timeout=30).text
    return {row.rsplit(" ", 1)[0] for row in text.splitlines() if row and not row.startswith("#")}


def test_unknown_pipeline_names_leave_no_series(server):
    assert httpx.post(server.url + PATH, json={"input": _input()}, timeout=60).status_code == 200
    for query in ("", "?explain=false"):  # the HTTP series of a 404 predict and of /metrics exist from now on
        r = httpx.post(server.url + f"/v1/pipelines/warm_up/predict{query}", json={"input": _input()}, timeout=60)
        assert r.status_code == 404, r.text
    _series(server)
    before = _series(server)
    rng = random.Random(14)
    for i in range(50):
        name = "".join(rng.choices(string.ascii_lowercase, k=12))
        query = "?explain=false" if i % 2 else ""
        r = httpx.post(server.url + f"/v1/pipelines/{name}/predict{query}", json={"input": _input()}, timeout=60)
        assert r.status_code == 404, r.text
    for _ in range(5):  # the streamed form holds its admission slot differently: same outcome
        name = "".join(rng.choices(string.ascii_lowercase, k=12))
        body = {"input": _input(), "stream": True}
        r = httpx.post(server.url + f"/v1/pipelines/{name}/predict", json=body, timeout=60)
        assert r.status_code == 404, r.text
    after = _series(server)
    assert after == before, sorted(after - before)
    assert any('pipeline="demo_digits"' in x for x in after)  # a served pipeline keeps its series


def test_gzip_predicts_and_refusals_are_labelled_by_route(server):
    body = gzip.compress(json.dumps({"input": _input()}).encode())
    headers = {"Content-Type": "application/json", "Content-Encoding": "gzip"}
    ok_before, bad_before = _metric(server, ROUTE_LINE.format(200)), _metric(server, ROUTE_LINE.format(422))
    for query in ("", "?explain=false"):
        r = httpx.post(server.url + PATH + query, content=body, headers=headers, timeout=60)
        assert r.status_code == 200, r.text
    r = httpx.post(
        server.url + PATH, content=gzip.compress(json.dumps({"input": _input(id="n\u0000")}).encode()), headers=headers
    )
    assert r.status_code == 422
    assert _metric(server, ROUTE_LINE.format(200)) == ok_before + 2
    assert _metric(server, ROUTE_LINE.format(422)) == bad_before + 1
