"""The one-shot model deployments (`/v2/models/NAME/infer`, batched across the `pipelines` replicas) and
what every replica shares: its `served_by` name, errors sent as plain data.

Each replica is a process of its own (a Ray actor) with its own `Workbench`: models, dynamic
batchers, CLIPS environments and a run recorder writing to the one store of the settings' database
URL. Replies cross process (and machine) boundaries as plain data: runs as dicts, errors as
`{"error": wire form}` rebuilt into the same `ServingError` at the ingress (`error_from_wire`), so the
HTTP answers are those of the single-process server.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from ray import serve

from workbench.config import Settings
from workbench.serving import errors as serving_errors
from workbench.serving.errors import ServingError, translate

log = logging.getLogger("workbench.scale")


def error_to_wire(exc: BaseException) -> dict[str, Any]:
    """A `ServingError` (any runtime error is translated first) as plain data: class name and attributes."""
    err = translate(exc) if not isinstance(exc, ServingError) else exc
    attrs = {k: v for k, v in vars(err).items() if isinstance(v, str | int | float | bool | list | dict | None)}
    return {"class": type(err).__name__, "message": err.message, "attrs": attrs}


def error_from_wire(doc: dict[str, Any]) -> ServingError:
    """The `ServingError` that `error_to_wire` sent (an unknown class becomes `ExecutionError`)."""
    cls = getattr(serving_errors, doc.get("class", ""), None)
    if not (isinstance(cls, type) and issubclass(cls, ServingError)):
        cls = serving_errors.ExecutionError
    err = cls.__new__(cls)
    Exception.__init__(err, doc["message"])
    err.message, err.param, err.details = doc["message"], None, []
    for k, v in (doc.get("attrs") or {}).items():
        setattr(err, k, v)
    return err


def replica_name() -> str:
    """`node <id> replica <deployment>#<replica id>` of the calling Serve replica."""
    from .cluster import where_am_i

    ctx = serve.get_replica_context()
    return where_am_i(f"replica {ctx.deployment}#{ctx.replica_id.unique_id}")


async def _start_serving(settings: Settings, load_models: bool | list[str]) -> Any:
    from workbench.serving import Serving
    from workbench.workbench import Workbench

    # durable: a run is answered only once committed, so a replica killed after answering loses nothing
    # (write-behind would drop the runs still queued in its recorder); concurrent runs share commits.
    wb = await asyncio.to_thread(lambda: Workbench(settings, durable=True))
    wb.recorder.skip_existing = True  # a retried request records its run once (id chosen at the ingress)
    serving = Serving(wb, settings=settings, serve_demo_lm=False, load_models=load_models)
    await serving.start()
    await wait_started(serving)
    return serving


async def wait_started(serving: Any, timeout_s: float = 600.0) -> None:
    """Wait for a replica's start-up loading (`Serving.wait_ready`). Raises StartupFailedError whose message is
    the reason alone, one line (e.g. `ModelLoadError: models/x.onnx: not a loadable ONNX model`): the last line
    of the traceback Ray Serve keeps for the failed deployment, which `serve --ray` prints (as `serve` does)."""
    from workbench.serving.errors import UnavailableError

    from . import StartupFailedError

    try:
        await serving.wait_ready(timeout_s)
    except UnavailableError as exc:
        reason = serving.readiness().get("error") or str(exc)
        raise StartupFailedError(" ".join(str(reason).split())) from None


class ModelReplica:
    """One one-shot model (`/v2/models/NAME/infer`), batching requests from every ingress.

    `batching="workbench"`: each request's rows enter the project's dynamic batcher inside the replica
    (max batch size and queue delay of the model's catalogue entry). `batching="serve"`: Ray Serve's
    `@serve.batch` gathers whole requests (`max_batch_size` requests, `batch_wait_timeout_s`) and the
    replica runs their rows through the model together. docs/scaling.md compares the two.
    """

    async def __init__(self, settings_doc: dict[str, Any], model: str, batching: str = "workbench") -> None:
        self.settings = Settings(**settings_doc)
        self.model_name = model
        self.batching = batching
        self.served_by = replica_name()
        self.serving = await _start_serving(self.settings, [model])

    def describe(self) -> Any:
        """The model's served metadata (`ServedModel`), for the ingress's `/v2/models/NAME` answers."""
        return self.serving.model(self.model_name)

    async def infer(self, version: str | None, inputs: dict[str, Any], timeout_s: float | None) -> dict[str, Any]:
        """`{"model": ServedModel, "outputs": {name: array}, "served_by"}` or `{"error": wire form}`."""
        try:
            served = self.serving.model(self.model_name, version)
            if self.batching == "serve":
                outputs = await self._batched((version, inputs, timeout_s))
                if isinstance(outputs, BaseException):
                    raise outputs
            else:
                out = await self.serving.infer(self.model_name, version, inputs, timeout_s=timeout_s)
                outputs = out.outputs
        except Exception as exc:
            return {"error": error_to_wire(exc)}
        return {"model": served, "outputs": outputs, "served_by": self.served_by}

    @serve.batch(max_batch_size=32, batch_wait_timeout_s=0.002)
    async def _batched(self, requests: list[tuple]) -> list[Any]:
        results = await _gathered(self, requests)
        return results

    def check_health(self) -> None:
        if not self.serving.ready:
            raise RuntimeError(f"replica not ready: {self.serving.readiness()}")


async def _gathered(self: ModelReplica, requests: list[tuple]) -> list[Any]:
    """`@serve.batch` body: the rows of every request in one `infer` (one version and deadline per batch:
    requests that differ are run group by group), outputs split back per request."""
    import numpy as np

    results: list[Any] = [None] * len(requests)
    groups: dict[tuple, list[int]] = {}
    for i, (version, inputs, timeout_s) in enumerate(requests):
        groups.setdefault((version, timeout_s, tuple(sorted(inputs))), []).append(i)
    for (version, timeout_s, names), idx in groups.items():
        sizes = [len(next(iter(requests[i][1].values()))) for i in idx]
        merged = {n: np.concatenate([np.asarray(requests[i][1][n]) for i in idx]) for n in names}
        try:
            out = await self.serving.infer(self.model_name, version, merged, timeout_s=timeout_s)
        except Exception as exc:
            for i in idx:
                results[i] = exc
            continue
        start = 0
        for i, size in zip(idx, sizes):
            results[i] = {k: v[start : start + size] for k, v in out.outputs.items()}
            start += size
    return results
