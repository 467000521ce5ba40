"""Pipelines, runs and knowledge bases over a real uvicorn server (httpx as the client)."""

from __future__ import annotations

import httpx
import numpy as np
import onnxruntime as ort
import pytest
from api_live import API_KEY, DIGITS_ONNX, FIXTURES

AUTH = {"Authorization": f"Bearer {API_KEY}"}
DOC = (FIXTURES / "digit_check.yaml").read_text()


@pytest.fixture(scope="module")
def http(pipeline_server):
    with httpx.Client(base_url=pipeline_server.url, timeout=60) as c:
        yield c


@pytest.fixture(scope="module")
def stored(http):
    r = http.put("/v1/pipelines/digit_check", content=DOC, headers={**AUTH, "Content-Type": "application/yaml"})
    assert r.status_code == 201, r.text
    return r.json()["version"]


@pytest.fixture(scope="module")
def logits_of():
    sess = ort.InferenceSession(str(DIGITS_ONNX), providers=["CPUExecutionProvider"])
    return lambda pixels: sess.run(["logits"], {"pixels": np.asarray(pixels, np.float32).reshape(1, 1, 64)})[0][0, 0]


def test_create_is_idempotent_per_version_and_listed(http, stored):
    r = http.put("/v1/pipelines/digit_check", json={"document": DOC}, headers=AUTH)
    assert r.status_code == 200 and r.json() == {"name": "digit_check", "version": stored, "created": False}
    names = [p["name"] for p in http.get("/v1/pipelines").json()["pipelines"]]
    assert "digit_check" in names
    got = http.get("/v1/pipelines/digit_check").json()
    assert got["version"] == stored and got["document"] == DOC and [v["version"] for v in got["versions"]] == [stored]


def test_predict_one_input_matches_the_model_and_is_recorded(http, stored, digits_data, logits_of):
    x, labels = digits_data
    r = http.post("/v1/pipelines/digit_check/predict", json={"input": {"pixels": x[0].tolist()}, "explain": True})
    assert r.status_code == 200, r.text
    run = r.json()
    logits = logits_of(x[0])
    assert run["status"] == "succeeded" and run["version"] == stored
    assert run["outputs"]["digit"] == int(np.argmax(logits)) == labels[0]
    assert run["outputs"]["action"] in ("accept", "review")
    assert run["explanation"] is not None and "classify" not in run["skipped"]
    rec = http.get(f"/v1/runs/{run['run_id']}").json()
    assert rec["outputs"] == run["outputs"] and rec["pipeline"] == "digit_check" and rec["trace"]
    assert rec["model_versions"]["digits"]
    listed = http.get("/v1/runs", params={"pipeline": "digit_check"}).json()["runs"]
    assert run["run_id"] in [x["run_id"] for x in listed]


def test_gate_skips_the_model_for_a_blank_image(http, stored):
    r = http.post("/v1/pipelines/digit_check/predict?explain=true", json={"input": {"pixels": [0] * 64}})
    assert r.status_code == 200
    assert r.json()["outputs"]["action"] == "rejected" and "classify" in r.json()["skipped"]


def test_batch_predict_keeps_order_and_isolates_a_bad_input(http, stored, digits_data, logits_of):
    x, _ = digits_data
    inputs = [{"pixels": x[i].tolist()} for i in range(6)]
    inputs[2] = {"pixels": x[2].tolist()[:63]}
    r = http.post("/v1/pipelines/digit_check/predict", json={"inputs": inputs})
    assert r.status_code == 200, r.text
    results = r.json()["results"]
    assert len(results) == 6
    assert results[2]["error"]["code"] == "validation_failed"
    assert results[2]["error"]["param"].startswith("body.inputs[2].pixels")
    for i in (0, 1, 3, 4, 5):
        assert results[i]["outputs"]["digit"] == int(np.argmax(logits_of(x[i])))


@pytest.mark.parametrize(
    "body, param",
    [
        ({"input": {"pixels": [1] * 63}}, "body.input.pixels"),
        ({"input": {"pixels": [1] * 64, "colour": "red"}}, "body.input"),
        ({"input": {"pixels": [1] * 5 + ["a"] + [1] * 58}}, "body.input.pixels[5]"),
        ({"inputs": []}, "body.inputs"),
        ({}, "body"),
        ({"input": {"pixels": [1] * 64}, "explain": "maybe"}, "body.explain"),
        ({"input": {"pixels": [1] * 64}, "surprise": 1}, "body.surprise"),
    ],
)
def test_invalid_bodies_are_422_with_the_field_path(http, stored, body, param):
    r = http.post("/v1/pipelines/digit_check/predict", json=body)
    assert r.status_code == 422, r.text
    err = r.json()["error"]
    assert err["code"] == "validation_failed" and err["param"].startswith(param), err
    assert set(err) == {"code", "message", "type", "param", "details", "request_id"}


def test_invalid_pipeline_is_refused_with_located_issues(http):
    bad = DOC.replace("knowledge_base: api_review", "knowledge_base: no_such_rules").replace(
        "name: digit_check", "name: broken"
    )
    r = http.put("/v1/pipelines/broken", content=bad, headers={**AUTH, "Content-Type": "application/yaml"})
    assert r.status_code == 422, r.text
    err = r.json()["error"]
    assert err["code"] == "validation_failed"
    assert any(d["node"] == "review" and d["line"] > 0 for d in err["details"]), err["details"]
    assert http.get("/v1/pipelines/broken").status_code == 404  # nothing stored
    r = http.put("/v1/pipelines/other_name", json={"document": DOC}, headers=AUTH)
    assert r.status_code == 422 and r.json()["error"]["param"] == "name"


def test_versions_promote_and_delete(http, stored):
    v2_doc = DOC.replace("unsure predictions go to review", "unsure ones go to a person")
    v2 = http.put("/v1/pipelines/digit_check", json={"document": v2_doc}, headers=AUTH).json()["version"]
    assert v2 != stored
    assert http.get("/v1/pipelines/digit_check").json()["version"] == v2  # newest when nothing is promoted
    r = http.put("/v1/pipelines/digit_check/stages/production", json={"version": stored[:12]}, headers=AUTH)
    assert r.status_code == 200 and r.json()["version"] == stored
    assert http.get("/v1/pipelines/digit_check").json()["version"] == stored
    assert http.get("/v1/pipelines/digit_check", params={"version": v2}).json()["document"] == v2_doc
    # a throw-away pipeline: delete removes every version
    http.put(
        "/v1/pipelines/to_delete",
        content=DOC.replace("name: digit_check", "name: to_delete"),
        headers={**AUTH, "Content-Type": "application/yaml"},
    )
    r = http.delete("/v1/pipelines/to_delete", headers=AUTH)
    assert r.status_code == 200 and r.json()["deleted_versions"] == 1
    assert http.get("/v1/pipelines/to_delete").status_code == 404


def test_unknown_names_are_404(http):
    for method, path, body in [
        ("GET", "/v1/pipelines/nope", None),
        ("POST", "/v1/pipelines/nope/predict", {"input": {}}),
        ("GET", "/v1/runs/ffffffff-0000", None),
        ("GET", "/v1/kb/nope", None),
        ("POST", "/v1/kb/nope/run", {"facts": []}),
        ("GET", "/v1/no/such/route", None),
    ]:
        r = http.request(method, path, json=body)
        assert r.status_code == 404, (path, r.text)
        assert r.json()["error"]["code"] == "not_found" and "Traceback" not in r.text


def test_auth_guards_mutations(http, pipeline_workbench):
    doc = DOC.replace("name: digit_check", "name: guarded")
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "Basic " + API_KEY}):
        r = http.put("/v1/pipelines/guarded", json={"document": doc}, headers=headers)
        assert r.status_code == 401 and r.json()["error"]["code"] == "unauthorized"
        assert r.headers["WWW-Authenticate"].startswith("Bearer")
        assert (
            http.put(
                "/v1/kb/guarded", content="(deftemplate a (slot b))", headers={**headers, "Content-Type": "text/plain"}
            ).status_code
            == 401
        )
        assert http.delete("/v1/pipelines/digit_check", headers=headers).status_code == 401
    assert http.get("/v1/pipelines/guarded").status_code == 404  # nothing was written
    assert "guarded" not in pipeline_workbench.library.names()
    r = http.put("/v1/pipelines/guarded", json={"document": doc}, headers={"Authorization": "Bearer another-key"})
    assert r.status_code == 201
    # predictions need no key unless require_key_for_predict is set
    assert http.post("/v1/pipelines/guarded/predict", json={"input": {"pixels": [0] * 64}}).status_code == 200


def test_predict_key_when_required(pipeline_workbench):
    from api_live import serve

    from workbench.serving import Serving

    settings = pipeline_workbench.test_settings.model_copy(update={"require_key_for_predict": True})
    server = serve(Serving(pipeline_workbench, settings=settings, load_models=False, serve_demo_lm=False), settings)
    try:
        body = {"input": {"pixels": [0] * 64}}
        assert httpx.post(server.url + "/v1/pipelines/digit_check/predict", json=body).status_code == 401
        assert httpx.post(server.url + "/v1/pipelines/digit_check/predict", json=body, headers=AUTH).status_code == 200
        assert httpx.post(server.url + "/v1/kb/family/run", json={}).status_code == 401
        assert httpx.get(server.url + "/v1/pipelines").status_code == 200  # reads stay open
    finally:
        server.stop()


# ---- knowledge bases ---------------------------------------------------------------------------------
def test_knowledge_base_list_get_and_upload(http):
    names = [k["name"] for k in http.get("/v1/kb").json()["knowledge_bases"]]
    assert {"family", "api_review", "api_image_gate"} <= set(names)
    fam = http.get("/v1/kb/family").json()
    assert fam["version"] and fam["sources"][0]["text"] == (FIXTURES / "family.clp").read_text()
    text = "(deftemplate light (slot colour))\n(defrule go (light (colour green)) => (assert (move)))\n"
    r = http.put("/v1/kb/traffic", content=text, headers={**AUTH, "Content-Type": "text/plain"})
    assert r.status_code == 201, r.text
    assert r.json()["name"] == "traffic"
    r = http.put("/v1/kb/traffic", json={"text": text}, headers=AUTH)
    assert r.status_code == 200
    out = http.post("/v1/kb/traffic/run", json={"facts": [{"template": "light", "slots": {"colour": "green"}}]}).json()
    assert [f["rule"] for f in out["firings"]] == ["go"]


def test_upload_over_a_folder_knowledge_base_is_409_and_writes_nothing(http, pipeline_workbench):
    """A PUT on a folder knowledge base wrote NAME.clp beside the folder, which from then on hid the
    folder's files (runs failed with "template 'a' is not defined"). Now: 409, nothing written."""
    kb_dir = pipeline_workbench.library.directory
    folder = kb_dir / "folderkb"
    folder.mkdir()
    (folder / "1.clp").write_text("(deftemplate a (slot x))\n")
    (folder / "2.clp").write_text("(defrule seen (a (x ?v)) => (assert (seen ?v)))\n")
    r = http.put("/v1/kb/folderkb", json={"text": "(defrule other (b) => (assert (c)))\n"}, headers=AUTH)
    assert r.status_code == 409, r.text
    err = r.json()["error"]
    assert err["code"] == "conflict" and "folder of 2 rule files (1.clp, 2.clp)" in err["message"]
    assert not (kb_dir / "folderkb.clp").exists()
    out = http.post("/v1/kb/folderkb/run", json={"facts": [{"template": "a", "slots": {"x": 1}}]})
    assert out.status_code == 200 and [f["rule"] for f in out.json()["firings"]] == ["seen"]


def test_invalid_rules_are_422_with_line_and_column(http):
    text = "(deftemplate light (slot colour))\n\n(defrule go\n  (light (color green))\n  =>\n  (assert (move)))\n"
    r = http.put("/v1/kb/broken_rules", json={"text": text}, headers=AUTH)
    assert r.status_code == 422, r.text
    details = r.json()["error"]["details"]
    assert details and details[0]["line"] == 4 and details[0]["column"] > 0 and "color" in details[0]["message"]
    unsafe = '(defrule boom => (system "touch /tmp/pwned"))\n'
    r = http.put("/v1/kb/unsafe", json={"text": unsafe}, headers=AUTH)
    assert r.status_code == 422 and "system" in r.json()["error"]["message"]
    assert http.get("/v1/kb/broken_rules").status_code == 404 and http.get("/v1/kb/unsafe").status_code == 404


def test_upload_errors_name_the_file_as_check_does_not_the_servers_path(http, pipeline_workbench):
    """docs/api.md: files are named relative to the knowledge-base folder (`zz.clp`), never by the
    server's path (PUT named `/tmp/.../zz.clp`; reviewer case 05_put_kb_error_file_path)."""
    text = "(defrule s (a) =>"
    r = http.put("/v1/kb/zz", content=text, headers={**AUTH, "Content-Type": "text/plain"})
    assert r.status_code == 422, r.text
    (detail,) = r.json()["error"]["details"]
    checked = http.post("/v1/kb/zz/check", json={"text": text}, headers=AUTH).json()["diagnostics"]
    assert detail["file"] == checked[0]["file"] == "zz.clp"
    assert (detail["line"], detail["column"], detail["message"]) == (
        checked[0]["line"],
        checked[0]["column"],
        checked[0]["message"],
    )
    assert str(pipeline_workbench.library.directory) not in r.text and "kb/zz.clp" not in r.text


def test_forward_run_and_backward_ask(http):
    r = http.post("/v1/kb/family/run", json={"facts": [{"template": "parent", "slots": {"of": "carl", "is": "dora"}}]})
    assert r.status_code == 200, r.text
    ancestors = {(f["slots"]["of"], f["slots"]["is"]) for f in r.json()["facts"] if f["template"] == "ancestor"}
    assert ("otto", "dora") in ancestors and len(ancestors) == 10
    r = http.post("/v1/kb/family/ask", json={"goal": "(ancestor (of otto) (is ?z))", "all": True})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["proved"] and sorted(a["bindings"]["z"] for a in body["answers"]) == ["anna", "bert", "carl"]
    assert all(a["proof"] for a in body["answers"])
    r = http.post("/v1/kb/family/run", json={"facts": [{"template": "parent", "slots": {"age": 3}}]})
    assert r.status_code == 422 and "age" in r.json()["error"]["message"]
    r = http.post("/v1/kb/family/run", json={"strategy": "sideways"})
    assert r.status_code == 422 and r.json()["error"]["param"] == "body.strategy"


def test_identical_puts_at_once_answer_201_once(pipeline_server):
    """n16: six identical `PUT /v1/pipelines/NAME` at once all answered 201 "new version" (each looked for the
    version before any stored it), though one version was stored. The store now says which call stored it."""
    from concurrent.futures import ThreadPoolExecutor

    doc = DOC.replace("name: digit_check", "name: put_race", 1)
    assert doc != DOC

    def put(_: int) -> httpx.Response:
        with httpx.Client(base_url=pipeline_server.url, timeout=120) as c:
            return c.put("/v1/pipelines/put_race", content=doc, headers={**AUTH, "Content-Type": "application/yaml"})

    with ThreadPoolExecutor(6) as pool:
        answers = list(pool.map(put, range(6)))
    assert sorted(a.status_code for a in answers) == [200] * 5 + [201], [a.text for a in answers]
    assert len({a.json()["version"] for a in answers}) == 1
    with httpx.Client(base_url=pipeline_server.url, timeout=60) as c:
        assert len(c.get("/v1/pipelines/put_race/versions").json()["versions"]) == 1


def test_ask_names_the_questions_nobody_answered(http):
    """n16: `POST /v1/kb/zoo/ask` answered `proved: false` with no `warnings`, so a client could not tell "no"
    from "never asked" (docs/backward.md promised `not asked, no provider: ...` warnings)."""
    from pathlib import Path

    zoo = (Path(__file__).resolve().parents[2] / "knowledge_bases" / "zoo.clp").read_text()
    r = http.put("/v1/kb/zoo", content=zoo, headers={**AUTH, "Content-Type": "text/plain"})
    assert r.status_code in (200, 201), r.text
    r = http.post("/v1/kb/zoo/ask", json={"goal": "(animal ?a)"})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["proved"] is False
    assert body["warnings"] and all(w.startswith("not asked, no provider: ") for w in body["warnings"])
    assert any("hair" in w for w in body["warnings"])
    r = http.post("/v1/kb/family/ask", json={"goal": "(ancestor (of otto) (is ?z))"})
    assert r.json()["warnings"] == []
