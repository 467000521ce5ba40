"""The routes that give every client what the TUI does in-process (issue 22): consultations, check-only,
validate-only, replay, served-model status and load/unload — over a real uvicorn server on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from api_live import API_KEY, ROOT, LiveServer, make_settings, serve

from workbench.serving import Serving

ZOO = """;@askable
;@question "Does the animal have ?feature?"
(deftemplate has (slot feature) (slot answer (allowed-symbols yes no)))
(deftemplate animal (slot kind))
(defrule bird (has (feature feathers) (answer yes)) => (assert (animal (kind bird))))
(defrule mammal (has (feature feathers) (answer no)) (has (feature fur) (answer yes))
  => (assert (animal (kind mammal))))
"""

CATALOG = f"""models:
  - name: demo-digits
    format: onnx
    path: {ROOT / "models" / "digits" / "model.onnx"}
    task: classification
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[LiveServer]:
    """A catalogue model loaded at start-up, an askable knowledge base, API keys set."""
    from workbench.workbench import Workbench

    tmp = tmp_path_factory.mktemp("tui-routes")
    (tmp / "kb").mkdir()
    (tmp / "kb" / "zoo.clp").write_text(ZOO)
    (tmp / "catalog.yaml").write_text(CATALOG)
    settings = make_settings(tmp, api_keys=[API_KEY])
    wb = Workbench(
        settings, knowledge_base_dir=tmp / "kb", pipeline_dir=tmp / "pipelines", model_catalog=tmp / "catalog.yaml"
    )
    live = serve(Serving(wb, settings=settings, load_models=True, serve_demo_lm=False), settings)
    yield live
    live.stop()
    wb.close()


def test_models_loaded_at_start_up_are_listed_before_any_request(server):
    body = httpx.get(server.url + "/v1/served-models").json()
    digits = {m["name"]: m for m in body["models"]}["demo-digits"]
    assert body["server_state"] == "ready"
    assert digits["state"] == "READY" and digits["loaded"] and digits["task"] == "classification"
    assert digits["kind"] == "tensor" and len(digits["version"]) == 12


def test_load_and_unload_need_the_key(server):
    url = server.url + "/v2/repository/models/demo-digits"
    refused = httpx.post(url + "/unload")
    assert refused.status_code == 401
    key = {"Authorization": f"Bearer {API_KEY}"}
    gone = httpx.post(url + "/unload", headers=key)
    assert gone.status_code == 200 and gone.json() == {"name": "demo-digits", "loaded": False, "version": None}
    assert httpx.post(url + "/unload", headers=key).status_code == 409  # not loaded
    status = {m["name"]: m for m in httpx.get(server.url + "/v1/served-models").json()["models"]}
    assert status["demo-digits"]["state"] == "UNAVAILABLE" and not status["demo-digits"]["loaded"]
    back = httpx.post(url + "/load", headers=key)
    assert back.status_code == 200 and back.json()["loaded"] and len(back.json()["version"]) == 12
    assert httpx.post(server.url + "/v2/repository/models/nope/load", headers=key).status_code == 404


def test_a_consultation_asks_until_the_goal_is_proved(server):
    c = httpx.Client(base_url=server.url, timeout=60)
    start = c.post("/v1/consultations", json={"knowledge_base": "zoo", "goal": "(animal (kind ?k))"})
    assert start.status_code == 201
    doc = start.json()
    cid, q = doc["id"], doc["question"]
    assert doc["state"] == "asking" and q["text"] == "Does the animal have feathers?"
    assert q["choices"] == ["yes", "no", "unknown"] and q["why"][0].startswith("(animal (kind ?k)) by rule bird")
    assert c.get(f"/v1/consultations/{cid}/question").json() == q
    assert c.get(f"/v1/consultations/{cid}/why").json()["why"] == q["why"]
    assert c.get(f"/v1/consultations/{cid}/result").status_code == 409  # still asking
    assert c.get(f"/v1/consultations/{cid}/how").status_code == 409  # no answer yet
    wrong = c.post(f"/v1/consultations/{cid}/answer", json={"answer": "maybe"})
    assert wrong.status_code == 409 and "answer one of: yes, no, unknown" in wrong.json()["error"]["message"]
    doc = c.post(f"/v1/consultations/{cid}/answer", json={"answer": "no"}).json()
    assert doc["state"] == "asking" and "fur" in doc["question"]["text"]
    doc = c.post(f"/v1/consultations/{cid}/answer", json={"answer": "yes"}).json()
    assert doc["state"] == "finished" and [a["bindings"] for a in doc["answers"]] == [{"k": "mammal"}]
    assert [t["answer"] for t in doc["transcript"]] == ["no", "yes"]
    how = c.get(f"/v1/consultations/{cid}/how", params={"answer": 1}).json()
    assert how["lines"][0].startswith("(animal (kind mammal))  by rule mammal")
    assert c.get(f"/v1/consultations/{cid}/result").json()["state"] == "finished"
    assert c.delete(f"/v1/consultations/{cid}").status_code == 204
    assert c.get(f"/v1/consultations/{cid}").status_code == 404


def test_a_consultation_with_a_bad_goal_or_knowledge_base_is_refused_at_once(server):
    bad = httpx.post(server.url + "/v1/consultations", json={"knowledge_base": "zoo", "goal": "(animal"})
    assert bad.status_code == 422 and "unclosed" in bad.json()["error"]["message"]
    missing = httpx.post(server.url + "/v1/consultations", json={"knowledge_base": "nope", "goal": "(a ?x)"})
    assert missing.status_code == 404


def test_check_only_never_writes(server, tmp_path):
    r = httpx.post(server.url + "/v1/kb/zoo/check", json={"text": "(defrule x =>"})
    body = r.json()
    assert r.status_code == 200 and not body["valid"]
    assert body["diagnostics"][0]["file"] == "zoo.clp" and body["diagnostics"][0]["line"] == 1
    two = httpx.post(
        server.url + "/v1/kb/pair/check",
        json={
            "sources": [
                {"file": "a.clp", "text": "(deftemplate t (slot x))"},
                {"file": "b.clp", "text": "(defrule r (t (y 1)) =>)"},
            ]
        },
    ).json()
    assert not two["valid"] and two["diagnostics"][0]["file"] == "b.clp"
    assert httpx.post(server.url + "/v1/kb/zoo/check", json={"text": ZOO}).json() == {
        "name": "zoo",
        "valid": True,
        "diagnostics": [],
    }
    assert httpx.post(server.url + "/v1/kb/zoo/check", json={}).status_code == 422


def test_validate_only_reports_references(server):
    doc = {
        "name": "p",
        "nodes": [
            {"id": "input", "type": "input", "facts": [{"template": "has", "slots": {"feature": "input.f"}}]},
            {"id": "r", "type": "rules", "knowledge_base": "missing_kb"},
            {"id": "out", "type": "output", "fields": {"x": "1"}},
        ],
        "edges": [{"from": "input", "to": "r"}, {"from": "r", "to": "out"}],
    }
    body = httpx.post(server.url + "/v1/pipelines/p/validate", json={"document": doc}).json()
    assert not body["valid"] and ("r", "knowledge_base") in [(i["node"], i["field"]) for i in body["issues"]]
    assert httpx.get(server.url + "/v1/pipelines").json()["pipelines"] == []  # nothing stored
    types = {t["type"]: t for t in httpx.get(server.url + "/v1/node-types").json()["types"]}
    assert types["gate"]["required"] == ["knowledge_base"] and "decision" in types["gate"]["fields"]


def test_replay_of_an_unknown_run_is_404(server):
    r = httpx.post(server.url + "/v1/runs/deadbeef/replay", json={"knowledge_bases": {}})
    assert r.status_code == 404
