"""`run_dataset(...)`: a batch run of a pipeline over many inputs with Ray Data.

The inputs become a Ray Data dataset; `map_batches` sends batches of them to a pool of actors, each a
process with its own `Workbench` (models loaded once per actor, their dynamic batchers filled by the
batch's runs; rules, fact mapping and schema checks on the actor's worker threads). Every run is
recorded as a local batch records it, in the one store of the settings' database URL, with
`served_by` naming the node and actor. Run ids are chosen here, before the dataset is built, so a
batch that Ray Data re-executes after an actor died records each run once.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from workbench.config import Settings

from . import require_ray
from .cluster import Cluster, connect


class PipelineActor:
    """A Ray Data actor (`map_batches(PipelineActor, ...)`): runs a batch of inputs through a pipeline.

    Args:
        settings_doc: the driver's `Settings.model_dump(mode="json")`.
        pipeline: a pipeline name (resolved as `Workbench.get_pipeline`) or an absolute YAML file path.
        version: a stored version (a unique prefix), or None.
        explain: include explanations in the results.
    """

    def __init__(self, settings_doc: dict[str, Any], pipeline: str, version: str | None, explain: bool) -> None:
        from workbench.workbench import Workbench

        from .cluster import where_am_i

        self.wb = Workbench(Settings(**settings_doc))
        self.served_by = where_am_i(f"actor {_actor_id()}")
        self.wb.recorder.served_by = self.served_by
        self.wb.recorder.skip_existing = True
        ref = Path(pipeline)
        self.pipeline = self.wb.load_pipeline_file(ref) if ref.is_file() else self.wb.get_pipeline(pipeline, version)
        self.explain = explain

    def __call__(self, batch: dict[str, Any]) -> dict[str, Any]:
        """`{"i": [int], "run_id": [str], "input": [JSON text]}` -> `{"i": [...], "line": [JSON text]}`."""
        import asyncio

        from workbench.pipeline.identity import RUN_IDENTITY, RunIdentity

        async def one(run_id: str, text: str) -> dict[str, Any]:
            token = RUN_IDENTITY.set(RunIdentity(run_id, self.served_by))
            try:
                r = await self.wb.run(self.pipeline, json.loads(text), explain=self.explain)
            except Exception as exc:  # bad input, full queue: the same error line as a local run
                return {"error": str(exc), "error_type": type(exc).__name__}
            finally:
                RUN_IDENTITY.reset(token)
            line = {"run_id": r.run_id, "status": r.status, "outputs": r.outputs, "error": r.error}
            if self.explain:
                line["explanation"] = r.explanation
            return line

        async def all_of() -> list[dict[str, Any]]:
            return list(await asyncio.gather(*(one(rid, t) for rid, t in zip(batch["run_id"], batch["input"]))))

        lines = self.wb._sync(all_of())
        self.wb.recorder.flush()  # the batch is recorded before Ray Data counts it done
        return {"i": list(batch["i"]), "line": [json.dumps(x, default=str) for x in lines]}


def _actor_id() -> str:
    ray = require_ray()
    return (ray.get_runtime_context().get_actor_id() or "")[:12]


def run_dataset(
    pipeline: str,
    inputs: Sequence[dict[str, Any]],
    *,
    cluster: Cluster | None = None,
    address: str = "local",
    settings: Settings | None = None,
    version: str | None = None,
    explain: bool = False,
    actors: int | None = None,
    batch_size: int = 32,
    on_result: Callable[[int, dict[str, Any]], None] | None = None,
) -> list[dict[str, Any]]:
    """Run `pipeline` on every input with Ray Data; returns one dict per input, in input order: the local
    `workbench run --input-file` line (`{"run_id", "status", "outputs", "error"}`, or `{"error",
    "error_type"}` for an input that was refused).

    Args:
        pipeline: a pipeline name or a YAML file (an absolute path is sent to the actors).
        cluster: a `connect(...)` result; None connects to `address` (and disconnects at the end).
        actors: actors in the pool (each reserves one CPU); default: the cluster's CPUs, at most the batches.
        batch_size: inputs per `map_batches` batch (their model calls batch together in the actor).
        on_result: called as `on_result(i, line)` as results arrive (in completion order): progress bars.

    Raises:
        RayNotInstalledError, ScaleError (see `connect`); what Ray Data raises if an actor keeps failing.
    """
    ray = require_ray()
    own = cluster is None
    if cluster is None:
        cluster = connect(address, settings=settings)
    try:
        ctx = ray.data.DataContext.get_current()
        ctx.enable_progress_bars = False
        ctx.verbose_progress = False
        ref = str(Path(pipeline).resolve()) if Path(pipeline).is_file() else pipeline
        rows = [{"i": i, "run_id": str(uuid.uuid4()), "input": json.dumps(x)} for i, x in enumerate(inputs)]
        if not rows:
            return []
        batches = -(-len(rows) // batch_size)
        cpus = int(sum(n["cpus"] for n in cluster.nodes())) or 1
        pool = max(1, min(actors or cpus, batches))
        ds = ray.data.from_items(rows, override_num_blocks=batches).map_batches(
            PipelineActor,
            fn_constructor_args=(cluster.settings.model_dump(mode="json"), ref, version, explain),
            batch_size=batch_size,
            batch_format="numpy",
            concurrency=pool,
            num_cpus=1,
        )
        out: list[dict[str, Any] | None] = [None] * len(rows)
        for row in ds.iter_rows():
            i = int(row["i"])
            out[i] = json.loads(row["line"])
            if on_result is not None:
                on_result(i, out[i])
        return [x if x is not None else {"error": "no result", "error_type": "LostResult"} for x in out]
    finally:
        if own:
            cluster.shutdown()
