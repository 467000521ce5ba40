"""Ray scale-out on a real two-node cluster (tests/scale/conftest.py) with PostgreSQL as the one store:
Ray Data batches equal the local batch; Ray Serve replicas on both nodes record each run exactly once;
a replica killed under load loses no admitted request silently and records nothing twice; SQLite with
more than one node is refused. Through the default ingress (HAProxy; `WB_SCALE_INGRESS=serve_proxy` for Serve's
proxy; test_serve_proxy_ingress.py runs the run-once and kill tests through the other one).
Every wait is bounded (httpx timeouts, deploy timeout, pytest timeout).
"""

from __future__ import annotations

import asyncio
import json
import time

import httpx
import pytest
from sqlalchemy import text

pytest.importorskip("ray", reason="the optional extra `ray` is not installed (uv sync --extra ray)")

from workbench.demo.digits_data import heldout_sequences  # noqa: E402
from workbench.store import Store  # noqa: E402

pytestmark = pytest.mark.slow
PIPELINE = "demo_digits"


def _inputs(tag: str, n: int) -> list[dict]:
    seqs = heldout_sequences(limit=min(n, 55))
    return [{**seqs[k % len(seqs)].to_input(), "id": f"{tag}-{k:03d}"} for k in range(n)]


def _runs_by_input_id(url: str, tag: str) -> dict[str, list[tuple[str, str | None]]]:
    """`{input id: [(run id, served_by), ...]}` of the stored runs whose input id starts with `tag`."""
    store = Store.open(url)
    try:
        with store.engine.connect() as conn:
            rows = conn.execute(text("SELECT id, inputs, served_by FROM runs")).all()
    finally:
        store.close()
    out: dict[str, list[tuple[str, str | None]]] = {}
    for rid, inputs, served_by in rows:
        doc = json.loads(inputs) if isinstance(inputs, str) else inputs
        iid = str(doc.get("id", ""))
        if iid.startswith(tag + "-"):
            out.setdefault(iid, []).append((rid, served_by))
    return out


def _node(served_by: str) -> str:
    return served_by.split()[1]  # "node <id> replica|actor <id>"


def test_ray_data_batch_equals_local_batch(ray_cluster, postgres_url, tmp_path):
    from workbench import Workbench
    from workbench.config import Settings
    from workbench.scale import run_dataset

    cluster, _ = ray_cluster
    items = _inputs("data", 16)
    seen: list[int] = []
    remote = run_dataset(PIPELINE, items, cluster=cluster, batch_size=4, on_result=lambda i, _: seen.append(i))
    with Workbench(Settings(database_url=f"sqlite:///{tmp_path / 'local.sqlite3'}")) as wb:
        local = wb.run_many_sync(PIPELINE, items)
    assert sorted(seen) == list(range(len(items)))
    assert [(r["status"], r["outputs"], r["error"]) for r in remote] == [(r.status, r.outputs, r.error) for r in local]
    stored = _runs_by_input_id(postgres_url, "data")
    assert sorted(stored) == sorted(x["id"] for x in items)
    assert all(len(v) == 1 for v in stored.values()), stored  # each run recorded exactly once
    assert {v[0][0] for v in stored.values()} == {r["run_id"] for r in remote}
    assert all(" actor " in v[0][1] for v in stored.values())


def test_sqlite_store_with_two_nodes_is_refused(ray_cluster, tmp_path):
    from workbench.config import Settings
    from workbench.scale import ScaleError, connect

    cluster, rc = ray_cluster
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'runs.sqlite3'}")
    with pytest.raises(ScaleError, match=r"SQLite file, but the Ray cluster has 2 nodes.*postgresql"):
        connect(rc.address, settings=settings)


TEXT = "To be, or not to be, that is the question: whether 'tis nobler in the mind to suffer the slings. " * 8


@pytest.fixture(scope="module")
def tiny_gpt2(tmp_path_factory):
    """A random-initialised GPT-2 folder written by transformers (vocab.json + merges.txt of a BPE trained
    here): the generation deployment serves it from this path (one machine: every node reads it)."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import GPT2Config, GPT2LMHeadModel

    folder = tmp_path_factory.mktemp("lm") / "tiny-gpt2"
    folder.mkdir()
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=300,
        special_tokens=["<|endoftext|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator([TEXT], trainer=trainer)
    tok.model.save(str(folder))
    (folder / "tokenizer_config.json").write_text(
        json.dumps({"tokenizer_class": "GPT2Tokenizer", "eos_token": "<|endoftext|>"})
    )
    torch.manual_seed(7)
    cfg = GPT2Config(
        vocab_size=tok.get_vocab_size(), n_embd=64, n_layer=2, n_head=4, n_positions=256, eos_token_id=0, bos_token_id=0
    )
    GPT2LMHeadModel(cfg).eval().save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def deployment(ray_cluster, tiny_gpt2):
    from api.app import create_app
    from workbench.scale import deploy

    cluster, _ = ray_cluster
    dep = deploy(
        cluster,
        app=create_app,
        replicas=2,
        models=["demo-digits"],
        generation={"tiny-gpt2": str(tiny_gpt2)},  # and the catalogue's demo-lm (the default `lms`)
        timeout_s=420,
    )
    yield dep
    dep.delete()


async def _predict_all(url: str, items: list[dict], concurrency: int, on_answer=None) -> list[httpx.Response]:
    sem = asyncio.Semaphore(concurrency)
    async with httpx.AsyncClient(base_url=url, timeout=httpx.Timeout(120.0)) as client:

        async def one(item: dict) -> httpx.Response:
            async with sem:
                try:  # the input id as the request id: Ray's logs (proxy, replicas) name the request by it
                    r = await client.post(
                        f"/v1/pipelines/{PIPELINE}/predict", json={"input": item}, headers={"x-request-id": item["id"]}
                    )
                except httpx.HTTPError as exc:
                    raise AssertionError(f"request {item['id']}: no answer ({exc!r})") from exc
                if on_answer is not None:
                    on_answer(r)
                return r

        return list(await asyncio.gather(*(one(x) for x in items)))


def test_same_routes_and_openapi_document_as_the_single_process_app(deployment):
    from api.app import create_app

    with httpx.Client(base_url=deployment.url, timeout=60) as client:
        served = client.get("/openapi.json").json()
        assert client.get("/readyz").status_code == 200
        assert client.get("/v2/models/demo-digits").json()["name"] == "demo-digits"
        item = _inputs("v2", 1)[0]
        pixels = [v for image in item["images"] for v in image]
        body = {
            "inputs": [{"name": "pixels", "datatype": "FP32", "shape": [1, len(item["images"]), 64], "data": pixels}]
        }
        infer = client.post("/v2/models/demo-digits/infer", json=body)  # the model deployment (@serve.batch)
        assert infer.status_code == 200, infer.text[:500]
        out = infer.json()["outputs"][0]
        assert out["shape"] == [1, len(item["images"]), 10]
        logits = [out["data"][i * 10 : (i + 1) * 10] for i in range(len(item["images"]))]
        read = "".join(str(max(range(10), key=row.__getitem__)) for row in logits)
        run = client.post("/v1/pipelines/demo_digits/predict", json={"input": item}).json()
        assert read == run["outputs"]["read"]  # the model deployment reads what the pipeline replica read
    assert served == create_app().openapi()


COMPLETIONS = [
    {"model": "tiny-gpt2", "prompt": "To be, or not", "max_tokens": 12, "temperature": 0},
    {"model": "tiny-gpt2", "prompt": "the slings and", "max_tokens": 12, "temperature": 0, "stream": True},
]
CHAT = {"model": "tiny-gpt2", "messages": [{"role": "user", "content": "whether"}], "max_tokens": 8, "temperature": 0}


def _generations(client) -> list:
    """Greedy texts of COMPLETIONS (a streamed one: its deltas joined), the chat answer, the v2 generate answer."""
    out = []
    for body in COMPLETIONS:
        r = client.post("/v1/completions", json=body)
        assert r.status_code == 200, r.text[:500]
        if body.get("stream"):
            events = [line[6:] for line in r.text.splitlines() if line.startswith("data: ")]
            assert events[-1] == "[DONE]"
            chunks = [json.loads(e)["choices"][0] for e in events[:-1]]
            out.append(("".join(c["text"] for c in chunks), [c["finish_reason"] for c in chunks][-1]))
        else:
            doc = r.json()
            out.append((doc["choices"][0]["text"], doc["choices"][0]["finish_reason"], doc["usage"]))
    chat = client.post("/v1/chat/completions", json=CHAT)
    assert chat.status_code == 200, chat.text[:500]
    out.append(chat.json()["choices"][0]["message"]["content"])
    v2 = client.post(
        "/v2/models/tiny-gpt2/generate", json={"text_input": "To be", "parameters": {"max_tokens": 6, "temperature": 0}}
    )
    assert v2.status_code == 200, v2.text[:500]
    out.append(v2.json()["text_output"])
    return out


def test_generation_deployment_answers_as_the_single_process_server(deployment, tiny_gpt2, tmp_path):
    """The OpenAI routes and /v2 generate of the Ray app stream from the generation deployment; the greedy
    texts equal the single-process app's (the same FastAPI app with the engine in its process)."""
    from fastapi.testclient import TestClient

    from api.app import create_app
    from workbench.config import Settings
    from workbench.serving import Serving

    with httpx.Client(base_url=deployment.url, timeout=120) as client:
        models = {m["id"] for m in client.get("/v1/models").json()["data"]}
        assert {"tiny-gpt2", "demo-lm"} <= models
        served = _generations(client)
        missing = client.post("/v1/completions", json={**COMPLETIONS[0], "model": "nope"})
        assert missing.status_code == 404, missing.text[:300]
        too_long = client.post("/v1/completions", json={**COMPLETIONS[0], "prompt": "slings " * 400})
        assert too_long.status_code == 400, too_long.text[:300]  # the replica's engine refused it: same error
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'local.sqlite3'}")
    serving = Serving(
        settings=settings, load_models=False, serve_demo_lm=False, load=lambda s: s.add_engine("tiny-gpt2", tiny_gpt2)
    )
    with TestClient(create_app(serving=serving, settings=settings)) as local:
        deadline = time.monotonic() + 120
        while local.get("/readyz").status_code != 200 and time.monotonic() < deadline:
            time.sleep(0.2)
        single = _generations(local)
    for what, a, b in zip(["completion", "streamed completion", "chat", "v2 generate"], served, single):
        assert a == b, what
    assert served[0][2]["completion_tokens"] == 12


def test_generate_node_of_a_pipeline_replica_streams_from_the_generation_deployment(deployment, tmp_path):
    """demo_generate (rails around a seeded generate node on demo-lm) through the pipeline replicas, whose
    catalogue's demo-lm is the generation deployment: the same outputs as a local run."""
    from workbench import Workbench
    from workbench.config import Settings

    items = [{"prompt": "ROMEO: What light", "seed": 3}, {"prompt": "To be, or not to be", "seed": 5}]
    gen = deployment.generation_handle()

    def engine_idle() -> dict:
        deadline = time.monotonic() + 30
        while (st := gen.stats.remote("demo-lm").result(timeout_s=30))["unfinished"] and time.monotonic() < deadline:
            time.sleep(0.2)
        return st

    # one request at a time on both sides: a rail-stopped request still decoding when the next one starts
    # would share engine steps with it (another batch size, other float sums: another sample past the cut)
    runs = []
    with httpx.Client(base_url=deployment.url, timeout=180) as client:
        for x in items:
            runs.append(client.post("/v1/pipelines/demo_generate/predict", json={"input": x}))
            engine_idle()
    assert [r.status_code for r in runs] == [200, 200], [r.text[:400] for r in runs]
    with Workbench(Settings(database_url=f"sqlite:///{tmp_path / 'local.sqlite3'}")) as wb:
        local = [wb.run_many_sync("demo_generate", [x])[0] for x in items]
    # the same text and usage: a rail stop counts the tokens up to its check point, however late the stop
    # reached the replica's engine or however many steps the replica merged into one stream item
    assert [r.json()["outputs"] for r in runs] == [r.outputs for r in local]
    assert all(r.json()["outputs"]["text"] for r in runs)
    where = deployment.pipelines_handle().where.remote().result(timeout_s=30)
    assert where["remote_lms"] == ["demo-lm", "tiny-gpt2"]  # no engine of its own: the deployment's
    # settings.ray.serve_env (the controller's, inherited) and pipelines_env reached the replica's process
    env = where["serve_env"]
    assert env["RAY_SERVE_WORKBENCH_TEST_SERVE"] == "1" and env["RAY_SERVE_WORKBENCH_TEST_PIPELINES"] == "1"
    assert env["RAY_SERVE_RUN_ROUTER_IN_SEPARATE_LOOP"] == "1"  # pipeline replicas call handles from threads
    assert env["RAY_SERVE_PROXY_READY_CHECK_TIMEOUT_S"] == "30"  # the controller's default (CONTROLLER_DEFAULTS)
    # a rail stopped the first generation mid-decode: the cancellation reached the replica's engine, which
    # aborted the request and freed its KV-cache blocks
    assert runs[0].json()["outputs"]["finish_reason"] == "rail_stop"
    stats = engine_idle()
    assert stats["unfinished"] == 0 and stats["used"] == 0 and stats["cancelled"] >= 1, stats


def test_predictions_served_on_both_nodes_each_run_recorded_once(deployment, postgres_url, tmp_path):
    from workbench import Workbench
    from workbench.config import Settings

    items = _inputs("serve", 40)
    answers = asyncio.run(_predict_all(deployment.url, items, concurrency=8))
    assert [r.status_code for r in answers] == [200] * len(items), [r.text[:300] for r in answers if r.is_error]
    runs = [r.json() for r in answers]
    nodes = {_node(r["served_by"]) for r in runs}
    assert len(nodes) == 2, f"replicas on both nodes expected, got {nodes}"
    with Workbench(Settings(database_url=f"sqlite:///{tmp_path / 'local.sqlite3'}")) as wb:
        local = wb.run_many_sync(PIPELINE, items)
    assert [r["outputs"] for r in runs] == [r.outputs for r in local]  # same results as one process
    stored = _runs_by_input_id(postgres_url, "serve")
    assert sorted(stored) == sorted(x["id"] for x in items)
    assert all(len(v) == 1 for v in stored.values())
    for item, run in zip(items, runs):
        assert stored[item["id"]] == [(run["run_id"], run["served_by"])]
    batch = _inputs("batch", 6)  # one request, one replica, one run per input
    r = httpx.post(f"{deployment.url}/v1/pipelines/{PIPELINE}/predict", json={"inputs": batch}, timeout=120)
    assert r.status_code == 200, r.text[:400]
    results = r.json()["results"]
    assert [x["outputs"] for x in results] == [x.outputs for x in wb_runs(batch, tmp_path)]
    stored = _runs_by_input_id(postgres_url, "batch")
    assert stored == {x["id"]: [(res["run_id"], res["served_by"])] for x, res in zip(batch, results)}
    assert len({res["run_id"] for res in results}) == len(batch)
    forged = {"x-workbench-run-id": runs[0]["run_id"], "x-workbench-attempt": "1", "x-workbench-proxy": "guess"}
    again = httpx.post(
        f"{deployment.url}/v1/pipelines/{PIPELINE}/predict", json={"input": items[1]}, headers=forged, timeout=60
    ).json()
    assert again["run_id"] != runs[0]["run_id"]  # a client cannot name a run (nor replay a stored one)


def wb_runs(items: list[dict], tmp_path) -> list:
    from workbench import Workbench
    from workbench.config import Settings

    with Workbench(Settings(database_url=f"sqlite:///{tmp_path / 'local-batch.sqlite3'}")) as wb:
        return wb.run_many_sync(PIPELINE, items)


def test_replica_killed_under_load_loses_nothing_silently_and_records_nothing_twice(deployment, postgres_url):
    import ray

    handle = deployment.pipelines_handle()
    replicas = {}
    deadline = time.monotonic() + 60
    while len(replicas) < 2 and time.monotonic() < deadline:
        w = handle.where.remote().result(timeout_s=30)
        replicas[w["served_by"]] = w["actor"]
    assert len(replicas) == 2
    victim_served_by, victim_actor = sorted(replicas.items())[0]
    items = _inputs("kill", 64)
    answered: list[int] = []
    killed: list[float] = []

    def on_answer(r: httpx.Response) -> None:
        answered.append(r.status_code)
        if len(answered) == 8 and not killed:
            ray.kill(ray.get_actor(victim_actor, namespace="serve"))
            killed.append(time.monotonic())

    answers = asyncio.run(_predict_all(deployment.url, items, concurrency=16, on_answer=on_answer))
    assert killed, "the replica was not killed during the load"
    ok = [(x, r.json()) for x, r in zip(items, answers) if r.status_code == 200]
    refused = [r for r in answers if r.status_code != 200]
    not_admitted = [x["id"] for x, r in zip(items, answers) if r.status_code == 429]
    for r in refused:  # not silent: a clear 503 naming the lost replica
        if r.status_code == 429:  # or, on a busy machine, admission control's refusal before any work (CI, load 8+)
            assert r.json()["error"]["code"] == "queue_full" and int(r.headers["retry-after"]) >= 1, r.text[:400]
            continue
        assert r.status_code == 503 and "replica" in r.json()["error"]["message"], r.text[:400]
    assert len(ok) + len(refused) == len(items)
    assert len(ok) >= len(items) // 2
    stored = _runs_by_input_id(postgres_url, "kill")
    assert not any(stored.get(i) for i in not_admitted), "a request refused with 429 was run"
    assert all(len(v) == 1 for v in stored.values()), {k: v for k, v in stored.items() if len(v) > 1}
    for item, run in ok:  # every answered run is recorded, once, as answered
        assert stored[item["id"]] == [(run["run_id"], run["served_by"])]
    assert any(run["served_by"] != victim_served_by for _, run in ok)


def _haproxy_configs(port: int) -> list[str]:
    """Configuration files of the running HAProxy processes (`-f FILE` of their command lines) that listen on
    `port`: one per node."""
    import os

    out = []
    for pid in (p for p in os.listdir("/proc") if p.isdigit()):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = [a.decode() for a in f.read().split(b"\0")]
        except OSError:
            continue
        if cmd and cmd[0].endswith("/haproxy") and "-f" in cmd:
            try:
                with open(cmd[cmd.index("-f") + 1]) as f:
                    text = f.read()
            except OSError:
                continue
            if f"bind 127.0.0.1:{port}\n" in text:
                out.append(text)
    return out


def test_haproxy_on_each_node_takes_the_requests_with_the_app_answering(deployment, ray_cluster, scale_ingress):
    """The HAProxy ingress (the default): one HAProxy per node, with Workbench's rules, balancing over the
    replicas, which answer HTTP themselves (the app's own errors; no Python proxy middleware)."""
    from api.app import create_app
    from workbench.scale.haproxy import MARK

    if scale_ingress != "haproxy":
        pytest.skip(f"the ingress of this run is {scale_ingress}")
    cluster, _ = ray_cluster
    with httpx.Client(base_url=deployment.url, timeout=60) as client:
        assert client.get("/readyz").status_code == 200
        served = client.get("/openapi.json").json()
        missing = client.post("/v1/pipelines/nope/predict", json={"input": {}})
    assert served == create_app().openapi()
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"  # the app's own errors
    where = deployment.pipelines_handle().where.remote().result(timeout_s=30)
    assert where["serve_env"]["RAY_SERVE_ENABLE_HA_PROXY"] == "1"
    assert "RAY_SERVE_HTTP_PROXY_CALLBACK_IMPORT_PATH" not in where["serve_env"]  # no Python proxy middleware
    deadline = time.monotonic() + 30  # Ray rewrites a configuration before it starts the HAProxy that reads it
    while True:
        configs = _haproxy_configs(cluster.settings.ray.http_port)
        ok = len(configs) == 2 and all(MARK in c and "SERVE_REPLICA_workbench-pipelines" in c for c in configs)
        if ok or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert len(configs) == 2, "one HAProxy per node expected"
    assert all(MARK in c and "SERVE_REPLICA_workbench-pipelines" in c for c in configs), configs
