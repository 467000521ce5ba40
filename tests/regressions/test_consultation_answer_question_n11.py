"""Regression (n11, newcomer walk-through): an answer to a consultation could not say which question
it answered, so a repeated answer (a double click, a client retrying after a lost reply; 4 concurrent
"yes" for question 1) answered questions 1, 2 and 3. `{"answer", "question": N}` now refuses (409,
nothing changed) an answer for a question that is no longer open; the TUI sends the number and drops
an answer typed twice. Also: `wait_s=NaN` named "less than or equal to 60" instead of "must be a
finite number". Real server on 127.0.0.1, the shipped zoo.clp (its questions are asked one by one)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import httpx
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "api"))
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    from api_live import make_settings, served_workbench

    tmp = tmp_path_factory.mktemp("consult-answer")
    kbs = tmp / "knowledge_bases"
    kbs.mkdir()
    shutil.copy(ROOT / "knowledge_bases" / "zoo.clp", kbs / "zoo.clp")
    settings = make_settings(tmp)
    with served_workbench(settings, knowledge_base_dir=kbs, pipeline_dir=tmp / "pipelines") as live:
        yield live


def _start(url: str) -> dict:
    r = httpx.post(f"{url}/v1/consultations", json={"knowledge_base": "zoo", "goal": "(animal ?a)", "all": True})
    assert r.status_code == 201, r.text
    assert r.json()["state"] == "asking" and r.json()["question"]["number"] == 1
    return r.json()


def test_a_repeated_answer_does_not_answer_the_next_question(server) -> None:
    c = _start(server.url)
    url = f"{server.url}/v1/consultations/{c['id']}/answer"
    first = httpx.post(url, json={"answer": "yes", "question": 1, "wait_s": 10})
    assert first.status_code == 200, first.text
    assert first.json()["question"]["number"] == 2
    again = httpx.post(url, json={"answer": "yes", "question": 1})
    assert again.status_code == 409, again.text
    assert again.json()["error"]["code"] == "conflict"
    assert "question 1 of consultation" in again.json()["error"]["message"]
    assert "question 2 is open" in again.json()["error"]["message"]
    now = httpx.get(f"{server.url}/v1/consultations/{c['id']}").json()
    assert [t["answer"] for t in now["transcript"]] == ["yes"]
    assert now["question"]["number"] == 2
    assert httpx.post(url, json={"answer": "no", "question": 2}).status_code == 200
    httpx.delete(f"{server.url}/v1/consultations/{c['id']}")


def test_without_a_number_the_open_question_is_answered_as_before(server) -> None:
    c = _start(server.url)
    url = f"{server.url}/v1/consultations/{c['id']}/answer"
    r = httpx.post(url, json={"answer": "yes"})
    assert r.status_code == 200 and r.json()["transcript"][0]["answer"] == "yes"
    assert httpx.post(url, json={"answer": "yes", "question": 0}).status_code == 422
    httpx.delete(f"{server.url}/v1/consultations/{c['id']}")


@pytest.mark.parametrize("value", ["NaN", "Infinity", "1e400"])
def test_non_finite_wait_s_is_named_as_such(server, value) -> None:
    c = _start(server.url)
    r = httpx.get(f"{server.url}/v1/consultations/{c['id']}", params={"wait_s": value})
    assert r.status_code == 422, r.text
    assert r.json()["error"]["message"] == "query.wait_s: must be a finite number"
    httpx.delete(f"{server.url}/v1/consultations/{c['id']}")


def test_an_unknown_id_on_a_multi_worker_server_says_where_consultations_live(server, monkeypatch) -> None:
    """With `serve --workers 2` a consultation lives in the worker that started it: 1 request in 4
    reached the other one and got "no consultation ... (finished ones expire after an hour)". The 404
    now says why when the server runs several workers (`Serving.multiprocess`); docs/api.md, Limits."""
    from workbench.serving import Serving

    plain = httpx.get(f"{server.url}/v1/consultations/0123456789abcdef")
    assert plain.status_code == 404 and "worker" not in plain.json()["error"]["message"]
    monkeypatch.setattr(Serving, "multiprocess", property(lambda self: True))
    many = httpx.get(f"{server.url}/v1/consultations/0123456789abcdef")
    assert many.status_code == 404, many.text
    message = many.json()["error"]["message"]
    assert message.startswith("no consultation '0123456789abcdef' (finished ones expire after an hour); ")
    assert "a consultation lives in the one that started it" in message
