"""The `pipelines` deployment: N replicas, each the project's FastAPI app running pipelines in-process.

    Serve HTTP proxy  load-balances requests over the replicas (and, with `workbench.scale.proxy`'s
                      middleware, retries a request whose replica died, under the same run id)
      -> pipelines (N)  `Ingress`: the same FastAPI app as `workbench serve` (same routes, same OpenAPI
                        document) around a `RayServing`: pipelines, rules and their models run here;
                        `/v2 .../infer` goes to the model deployments (batched across replicas),
                        generation to the generation deployment

Why one deployment and not an ingress in front of pipeline replicas: on Ray Serve every hop between
deployments is an actor call with its arguments and answer pickled, and every HTTP request already
crosses the proxy. Measured (docs/scaling.md, per-process CPU seconds per request), an ingress replica
that only routed to a pipeline replica cost half as much CPU as the pipeline run itself, so a second
pipeline replica had no core left to use. Here the proxy is the only hop.

Run ids: the proxy middleware names each request's run (`x-workbench-run-id`) and its attempt
(`x-workbench-attempt`), signed with the Serve instance's token (`x-workbench-proxy`); the replica
records the run under that id, and a retried attempt whose run was already committed by the lost
replica is answered as stored. Requests without a valid token (no middleware in the proxy) get fresh
ids and are not retried by the proxy. With the HAProxy ingress (`workbench.scale.haproxy`) HAProxy sets the
same headers, with the attempt `any` (it sends a lost request again unchanged): every prediction then looks
its run id up first.
"""

from __future__ import annotations

import asyncio
import contextvars
import hmac
import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from workbench.config import Settings
from workbench.pipeline.identity import RUN_IDENTITY, RunIdentity
from workbench.serving import Serving
from workbench.serving.errors import call, code_of, translate

from .generation import RemoteEngine, remote_engines
from .proxy import BODY_SCOPE_KEY
from .replicas import error_from_wire, replica_name, wait_started

log = logging.getLogger("workbench.scale")

RUN_ID_HEADER = b"x-workbench-run-id"
ATTEMPT_HEADER = b"x-workbench-attempt"
TOKEN_HEADER = b"x-workbench-proxy"


@dataclass(frozen=True, slots=True)
class RequestRun:
    """The run id the proxy chose for a request and which attempt this is (0: the first; `ANY_ATTEMPT`: not
    known, a later one maybe: HAProxy sends a lost request again unchanged, `workbench.scale.haproxy`)."""

    run_id: str
    attempt: int


ANY_ATTEMPT = -1


REQUEST_RUN: contextvars.ContextVar[RequestRun | None] = contextvars.ContextVar("workbench_request_run", default=None)


class RunIdMiddleware:
    """ASGI middleware of a replica: `REQUEST_RUN` from the proxy's headers when they carry the Serve
    instance's token (anything else, e.g. a client's own `x-workbench-*` headers, is ignored); the body
    from the request itself when the proxy's middleware put it there (`workbench.scale.proxy.BODY_SCOPE_KEY`:
    a request Serve re-sent to this replica after the first one died may find the proxy's body stream
    already drained by the dead one)."""

    def __init__(self, app: Any, token: str | None) -> None:
        self.app = app
        self.token = token.encode() if token else None

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        inline = scope.get(BODY_SCOPE_KEY)
        if inline is not None:
            receive = _InlineBody(inline, receive)
        if self.token is None:
            return await self.app(scope, receive, send)
        run_id = attempt = token = None
        for k, v in scope.get("headers") or ():
            if k == RUN_ID_HEADER:
                run_id = v
            elif k == ATTEMPT_HEADER:
                attempt = v
            elif k == TOKEN_HEADER:
                token = v
        if run_id is None or token is None or not hmac.compare_digest(token, self.token):
            return await self.app(scope, receive, send)
        n = int(attempt) if attempt and attempt.isdigit() else (ANY_ATTEMPT if attempt == b"any" else 0)
        ctx_token = REQUEST_RUN.set(RequestRun(run_id.decode("ascii", "replace"), n))
        try:
            return await self.app(scope, receive, send)
        finally:
            REQUEST_RUN.reset(ctx_token)


class _InlineBody:
    """ASGI `receive` of a request whose complete body came inside it: that body first, then only what the
    proxy's stream says after the body (`http.disconnect`); the stream's own copy of the body is skipped."""

    __slots__ = ("_body", "_receive")

    def __init__(self, body: bytes, receive: Any) -> None:
        self._body: bytes | None = body
        self._receive = receive

    async def __call__(self) -> dict[str, Any]:
        if self._body is not None:
            body, self._body = self._body, None
            return {"type": "http.request", "body": body, "more_body": False}
        while True:
            msg = await self._receive()
            if msg["type"] != "http.request":
                return msg


class RayServing(Serving):
    """The `Serving` of a `pipelines` replica: pipelines run in this process (rules, fact mapping, the
    models they call through the project's dynamic batcher), every run recorded with `served_by` under the
    id the proxy chose; `/v2 .../infer` of a deployed model on its model deployment; generation on the
    generation deployment (a `RemoteEngine` per served LM in place of a local engine).

    Args:
        models: `{model name: DeploymentHandle of its ModelReplica}` (`/v2` inference and metadata).
        settings: the replica's settings (`settings.ray.retries`: generation requests whose replica died).
        generation: DeploymentHandle of `GenerationReplica`, or None (no causal LM served).
        load_models: catalogue models loaded before the replica answers (pipelines call them in-process).
    """

    def __init__(
        self, models: dict[str, Any], settings: Settings, generation: Any = None, load_models: list[str] | None = None
    ) -> None:
        super().__init__(None, settings=settings, load_models=list(load_models or []) or False, serve_demo_lm=False)
        self._model_handles = models
        self._generation = generation
        self._served: dict[str, Any] = {}  # ServedModel of each model deployment, fetched at start-up
        self.retries = settings.ray.retries
        self.served_by: str | None = None

    async def start(self) -> None:
        """Begin loading once (the replica's constructor starts it; the app's lifespan calls it again)."""
        if self._task is None:
            self.served_by = replica_name()
            await super().start()

    def _load(self) -> None:
        from workbench.workbench import Workbench

        # durable: a run is answered only once committed, so a replica killed after answering loses nothing
        # (write-behind would drop the runs still queued in its recorder); concurrent runs share commits.
        wb = self.workbench = Workbench(self.settings, durable=True)
        wb.recorder.skip_existing = True  # a retried request records its run once (id chosen by the proxy)
        wb.recorder.served_by = self.served_by
        super()._load()
        for name, handle in self._model_handles.items():
            self._served[name] = handle.describe.remote().result(timeout_s=600)
        if self._generation is not None:
            interval = self.settings.ray.generation_stream_interval_s
            for name, engine in remote_engines(self._generation, self.retries, interval).items():
                self._engines[name] = engine  # not owned: the replica's engine outlives this process
            # pipelines' generate nodes stream every engine step (interval 0): their rails judge each step
            for engine in remote_engines(self._generation, self.retries, 0.0).values():
                wb.catalog.register(engine.entry())

    async def generate_with_rails(
        self, model: str, prompt: str | list[int], params: dict[str, Any], request_id: str, rails: str
    ) -> Any:
        """`Serving.generate_with_rails`, its request streamed step by step from the replica (the rails judge
        each step's text, as in one process, not the merged steps of an interval)."""
        engine = self._engines.get(model)
        if isinstance(engine, RemoteEngine):
            engine.per_step.add(request_id)
        try:
            async for delta in super().generate_with_rails(model, prompt, params, request_id, rails):
                yield delta
        finally:
            if isinstance(engine, RemoteEngine):
                engine.per_step.discard(request_id)

    def chat_prompt(self, model: str, messages: list[dict[str, Any]]) -> str:
        """`Serving.chat_prompt` rendered on the generation replica (the template is in the model folder
        there). Blocks: the route calls it in a thread. Raises NotFoundError, BadInputError."""
        from workbench.serving.errors import BadInputError

        engine = self._engine(model)
        if not isinstance(engine, RemoteEngine):
            return super().chat_prompt(model, messages)
        reply = engine.render_chat(messages)
        if "error" in reply:
            raise BadInputError(f"model {model!r}: {reply['error']}", param="messages")
        return reply["prompt"]

    def _remote_model(self, name: str, version: str | None) -> Any:
        served = self._served.get(name)
        if served is None or version not in (None, served.version):
            return None
        return served

    def model(self, name: str, version: str | None = None) -> Any:
        """Metadata of a model with a deployment comes from its replica."""
        self.require_ready()
        return self._remote_model(name, version) or super().model(name, version)

    def model_versions(self, name: str) -> list[str]:
        served = self._remote_model(name, None)
        return [served.version] if served is not None else super().model_versions(name)

    def model_ready(self, name: str, version: str | None = None) -> bool:
        if self._state == "ready" and self._remote_model(name, version) is not None:
            return True
        return super().model_ready(name, version)

    async def _stored(self, run_id: str, explain: bool) -> dict[str, Any] | None:
        """The run committed under `run_id` by an earlier attempt, answered as a fresh run answers."""
        from workbench.pipeline.result import RunResult

        store = self.workbench.store
        # Never on the event loop, SQLite included: a lookup that is ~0.05 ms alone waits (busy handler,
        # WAL read retries, the connection pool) while another replica writes the same file, and the loop
        # then stood still for every request of this replica (bursts over p99 from one replica at a time,
        # 150+ ms each; docs/scaling.md, "The 2-replica tail").
        if not await asyncio.to_thread(_run_exists, store.engine, run_id):
            return None
        row = await asyncio.to_thread(store.get_run, run_id)
        if row is None or row.id != run_id:
            return None
        run = RunResult.from_row(row).to_dict()
        if not explain and not (run.get("explanation") or {}).get("explain_nodes"):
            run["explanation"] = None  # as a fresh run answers: recorded always, returned when asked
        return run

    async def _run_one(self, run_id: str, attempt: int, name: str, inputs: dict[str, Any], **kw: Any) -> dict[str, Any]:
        if attempt and (stored := await self._stored(run_id, kw.get("explain", False))) is not None:
            return stored  # the lost replica committed it: answered as recorded, not run again
        token = RUN_IDENTITY.set(RunIdentity(run_id, self.served_by))
        try:
            run = await super().predict(name, inputs, **kw)
        finally:
            RUN_IDENTITY.reset(token)
        run["run_id"] = run["run_id"] or run_id
        run["served_by"] = self.served_by
        return run

    async def predict(
        self,
        name: str,
        inputs: dict[str, Any],
        *,
        version: str | None = None,
        explain: bool = False,
        timeout_s: float | None = None,
    ) -> dict[str, Any]:
        """`Serving.predict` in this replica, recorded under the proxy's run id (errors as there)."""
        req = REQUEST_RUN.get()
        run_id, attempt = (req.run_id, req.attempt) if req else (str(uuid.uuid4()), 0)
        return await self._run_one(run_id, attempt, name, inputs, version=version, explain=explain, timeout_s=timeout_s)

    async def predict_many(
        self,
        name: str,
        inputs: list[dict[str, Any]],
        *,
        version: str | None = None,
        explain: bool = False,
        timeout_s: float | None = None,
    ) -> list[dict[str, Any]]:
        """A batch in this replica: one run per input under its own id (derived from the request's), run
        concurrently so their model calls batch together. Items as `Serving.predict_many`."""
        wb = self._wb()
        await call(wb.get_pipeline, name, version)  # NotFoundError etc. for the whole batch
        req = REQUEST_RUN.get()
        base = uuid.UUID(req.run_id) if req else uuid.uuid4()
        attempt = req.attempt if req else 0

        async def one(i: int, item: dict[str, Any]) -> dict[str, Any]:
            try:
                return await self._run_one(
                    str(uuid.uuid5(base, str(i))),
                    attempt,
                    name,
                    item,
                    version=version,
                    explain=explain,
                    timeout_s=timeout_s,
                )
            except Exception as exc:
                err = translate(exc)
                return {"error": {"code": code_of(err), "message": err.message, "param": err.param}}

        return list(await asyncio.gather(*(one(i, x) for i, x in enumerate(inputs))))

    async def infer(self, name: str, version: str | None, inputs: dict[str, Any], *, timeout_s: float | None = None):
        """`Serving.infer` on the model's deployment (models without one run in this replica)."""
        from workbench.serving.admission import with_deadline
        from workbench.serving.models import InferenceOutput

        handle = self._model_handles.get(name)
        if handle is None:
            return await super().infer(name, version, inputs, timeout_s=timeout_s)
        deadline = self._deadline(timeout_s)
        reply = await with_deadline(handle.infer.remote(version, inputs, deadline), deadline + 1.0, f"model {name!r}")
        if "error" in reply and isinstance(reply["error"], dict) and "class" in reply["error"]:
            raise error_from_wire(reply["error"])
        return InferenceOutput(reply["model"], reply["outputs"])


def _run_exists(engine: Any, run_id: str) -> bool:
    """Whether a run is stored under exactly `run_id` (every prediction asks under the HAProxy ingress, whose
    attempts the replica cannot tell apart: one primary-key lookup, ~0.05 ms on SQLite)."""
    from sqlalchemy import select

    from workbench.store.models import RunRow

    with engine.connect() as conn:
        return conn.execute(select(RunRow.id).where(RunRow.id == run_id)).first() is not None


class Ingress:
    """A `pipelines` replica: the project's FastAPI app (`app(serving=RayServing, settings=...)`), its models
    loaded before the replica takes requests.

    Args:
        settings_doc: `Settings.model_dump(mode="json")` of the deploying process (database URL included).
        app: the FastAPI app factory (`api.app.create_app`).
        models: `{name: DeploymentHandle}` of the model deployments.
        generation: DeploymentHandle of the generation deployment, or None.
        load_models: catalogue models to load before the replica reports healthy.
        proxy_token: the Serve instance's token that the proxy middleware sends (None: no proxy retries).
    """

    async def __init__(
        self,
        settings_doc: dict[str, Any],
        app: Callable[..., Any],
        models: dict,
        generation: Any = None,
        load_models: list[str] | None = None,
        proxy_token: str | None = None,
    ) -> None:
        self.settings = Settings(**settings_doc)
        self.serving = RayServing(models, self.settings, generation, load_models)
        self._app_factory = app
        self._proxy_token = proxy_token
        await self.serving.start()
        await wait_started(self.serving)  # Serve routes requests here only once the models are loaded

    def __serve_build_asgi_app__(self) -> Any:
        return RunIdMiddleware(self._app_factory(serving=self.serving, settings=self.settings), self._proxy_token)

    def where(self) -> dict[str, Any]:
        """`{"served_by", "actor", "remote_lms", "serve_env"}`: this replica's `served_by`, its Ray actor's name
        (namespace "serve"), the catalogue LMs its `generate` nodes stream from the generation deployment and
        the `RAY_SERVE_*` variables of its environment (`settings.ray.serve_env`, `pipelines_env`)."""
        import os

        import ray

        loaded = self.serving.workbench.catalog.loaded
        return {
            "served_by": self.serving.served_by,
            "actor": ray.get_runtime_context().get_actor_name() or "",
            "remote_lms": sorted(n for n, e in loaded.items() if isinstance(e.backend, RemoteEngine)),
            "serve_env": {k: v for k, v in os.environ.items() if k.startswith("RAY_SERVE_")},
        }

    def check_health(self) -> None:
        """Ray Serve's health check: healthy unless its start-up loading failed."""
        if not self.serving.ready:
            raise RuntimeError(f"replica not ready: {self.serving.readiness()}")
