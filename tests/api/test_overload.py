"""Back-pressure: a full model queue answers 429 with Retry-After; every admitted request is answered correctly."""

from __future__ import annotations

import asyncio

import httpx
import numpy as np
import torch
from api_live import HeavyMLP


async def test_full_queue_gets_429_and_no_admitted_request_is_lost(model_server, model_registry):
    batcher = model_registry.get("heavy").batcher
    served_before, rejected_before = batcher.stats.requests, batcher.stats.rejected
    rng = np.random.default_rng(7)
    xs = rng.standard_normal((48, 16)).astype(np.float32)
    with torch.inference_mode():
        want = HeavyMLP()(torch.from_numpy(xs)).numpy()  # the same seeded weights, run directly

    async def one(client: httpx.AsyncClient, i: int) -> httpx.Response:
        body = {
            "id": f"req-{i}",
            "inputs": [{"name": "x", "shape": [1, 16], "datatype": "FP32", "data": xs[i].tolist()}],
        }
        return await client.post("/v2/models/heavy/infer", json=body)

    limits = httpx.Limits(max_connections=64)
    async with httpx.AsyncClient(base_url=model_server.url, timeout=60, limits=limits) as client:
        responses = await asyncio.gather(*(one(client, i) for i in range(48)))

    ok = [i for i, r in enumerate(responses) if r.status_code == 200]
    refused = [i for i, r in enumerate(responses) if r.status_code == 429]
    assert len(ok) + len(refused) == 48, sorted({r.status_code for r in responses})
    assert refused and ok
    for i in refused:
        r = responses[i]
        assert int(r.headers["Retry-After"]) >= 1
        assert set(r.json()) == {"error"} and "queue is full" in r.json()["error"]
    for i in ok:  # each admitted request got its own row's result
        body = responses[i].json()
        assert body["id"] == f"req-{i}"
        np.testing.assert_allclose(
            np.array(body["outputs"][0]["data"]).reshape(1, 4), want[i : i + 1], rtol=1e-4, atol=1e-5
        )
    assert batcher.stats.requests - served_before == len(ok)  # every admitted row ran exactly once
    assert batcher.stats.rejected - rejected_before == len(refused)


async def test_a_batch_that_does_not_fit_is_refused_whole(model_server, model_registry):
    batcher = model_registry.get("heavy").batcher
    served_before = batcher.stats.requests
    body = {"inputs": [{"name": "x", "shape": [4, 16], "datatype": "FP32", "data": [0.0] * 64}]}
    async with httpx.AsyncClient(base_url=model_server.url, timeout=60) as client:
        r = await client.post("/v2/models/heavy/infer", json=body)
    # four rows can never fit a queue of three: a clear 400, and nothing ran
    assert r.status_code == 400 and "max_queue_size=3" in r.json()["error"]
    assert batcher.stats.requests == served_before


HEAVY_PIPELINE = """
name: heavy_score
description: A slow model behind rules, for back-pressure through the pipeline endpoint.
nodes:
  - id: req
    type: input
    schema:
      type: object
      required: [x]
      properties:
        x: {type: array, items: {type: number}, minItems: 16, maxItems: 16}
  - id: mlp
    type: model
    model: heavy
    inputs: {x: "input.x"}
    facts:
      - template: score
        slots: {best: "argmax(y)", value: "max(y)"}
  - id: policy
    type: postprocess
    knowledge_base: heavy_policy
  - id: result
    type: output
    fields:
      best: "score.best"
      flag: {expr: "flag.level", default: none}
edges:
  - {from: req, to: mlp}
  - {from: mlp, to: policy}
  - {from: policy, to: result}
"""

HEAVY_POLICY = """
(deftemplate score (slot best (type INTEGER)) (slot value (type NUMBER)))
(deftemplate flag (slot level))
(defrule high-score (score (value ?v&:(> ?v 0.0))) => (assert (flag (level high))))
"""


async def test_pipeline_predict_overload_gets_429_and_every_admitted_run_is_recorded(
    pipeline_workbench, pipeline_server
):
    from neural.batching import BatcherConfig

    wb = pipeline_workbench
    (wb.knowledge_base_dir / "heavy_policy.clp").write_text(HEAVY_POLICY)
    # deeper than the KServe one: the pipeline front (schema, rules, recording) is slower than a bare infer
    wb.register_model(
        "heavy",
        HeavyMLP(depth=32),
        example_inputs={"x": np.zeros((1, 16), np.float32)},
        output_names=["y"],
        batcher_config=BatcherConfig(max_batch_size=1, max_queue_size=1, max_queue_delay_ms=0, buckets=None),
    )
    auth = {"Authorization": "Bearer test-key-1"}
    async with httpx.AsyncClient(
        base_url=pipeline_server.url, timeout=120, limits=httpx.Limits(max_connections=64)
    ) as client:
        r = await client.put(
            "/v1/pipelines/heavy_score", content=HEAVY_PIPELINE, headers={**auth, "Content-Type": "application/yaml"}
        )
        assert r.status_code == 201, r.text
        xs = np.random.default_rng(3).standard_normal((40, 16)).astype(np.float32)
        with torch.inference_mode():
            best = HeavyMLP(depth=32)(torch.from_numpy(xs)).numpy().argmax(1)
        rs = await asyncio.gather(
            *(client.post("/v1/pipelines/heavy_score/predict", json={"input": {"x": x.tolist()}}) for x in xs)
        )
    codes = [r.status_code for r in rs]
    assert set(codes) <= {200, 429} and 429 in codes and 200 in codes, codes
    for i, r in enumerate(rs):
        if r.status_code == 429:
            assert r.json()["error"]["code"] == "queue_full" and int(r.headers["Retry-After"]) >= 1
        else:
            assert r.json()["outputs"] == {"best": int(best[i]), "flag": r.json()["outputs"]["flag"]}
    recorded = {run.run_id for run in wb.list_runs("heavy_score", limit=1000)}
    assert recorded == {r.json()["run_id"] for r in rs if r.status_code == 200}
