"""`deploy(...)`: the REST API as a Ray Serve application.

    ingress (1 replica)  the same FastAPI app as `workbench serve` (same routes, same OpenAPI
                         document), built by the `app` factory around a `RayServing`
      -> pipelines (N)   pipeline execution (`PipelineReplica`): `POST /v1/pipelines/NAME/predict`
      -> model-NAME (M)  each one-shot model of the catalogue (`ModelReplica`): `POST /v2/models/NAME/infer`
      -> generation (G)  the generation engine (`GenerationReplica`, one replica per GPU): the OpenAI routes,
                         `/v2/models/NAME/generate` and the pipeline replicas' `generate` nodes stream from it
                         (`RemoteEngine`, workbench/scale/generation.py)

Everything else the API offers (pipelines, runs, knowledge bases) is answered by the ingress's own
`Workbench` on the same store. The seam is `Serving` itself: the API's routes call
`serving.predict` / `predict_many` / `infer`, and `RayServing` (a `Serving`) sends those to the
deployments instead of running them in the process. The ingress picks each run's id, so a request
retried on another replica (its replica died) is recorded once.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ray import serve

from workbench.config import Settings
from workbench.serving import Serving
from workbench.serving.admission import with_deadline
from workbench.serving.errors import UnavailableError
from workbench.serving.models import InferenceOutput

from .cluster import Cluster
from .generation import GenerationReplica, RemoteEngine, generation_options, remote_engines
from .replicas import ModelReplica, PipelineReplica, error_from_wire

log = logging.getLogger("workbench.scale")


def _replica_gone(exc: BaseException) -> bool:
    """The request was lost with its replica (died, killed, unreachable): safe to retry, the run id is fixed."""
    from ray import exceptions as rex

    gone = (rex.RayActorError, rex.ActorUnavailableError, rex.ActorDiedError)
    return isinstance(exc, gone) or isinstance(getattr(exc, "cause", None), gone)


class RayServing(Serving):
    """A `Serving` that runs predictions on the `pipelines` deployment and tensor inference on the
    model deployments, generation on the generation deployment (a `RemoteEngine` per served LM in place of
    a local engine); the rest (documents, runs, knowledge bases) on its own `Workbench`.

    Args:
        pipelines: DeploymentHandle of `PipelineReplica`.
        models: `{model name: DeploymentHandle of its ModelReplica}`.
        settings: the ingress's settings (`settings.ray.retries`: how often a request whose replica died
            is retried before it answers 503).
        generation: DeploymentHandle of `GenerationReplica`, or None (no causal LM served).
    """

    def __init__(self, pipelines: Any, models: dict[str, Any], settings: Settings, generation: Any = None) -> None:
        super().__init__(None, settings=settings, load_models=False, serve_demo_lm=False)
        self._pipelines = pipelines
        self._model_handles = models
        self._generation = generation
        self._served: dict[str, Any] = {}  # ServedModel of each model deployment, fetched at start-up
        self.retries = settings.ray.retries

    def _load(self) -> None:
        super()._load()
        for name, handle in self._model_handles.items():
            self._served[name] = handle.describe.remote().result(timeout_s=600)
        if self._generation is not None:
            catalog = getattr(self.workbench, "catalog", None)
            interval = self.settings.ray.generation_stream_interval_s
            for name, engine in remote_engines(self._generation, self.retries, interval).items():
                self._engines[name] = engine  # not owned: the replica's engine outlives this process
                if catalog is not None:
                    catalog.register(engine.entry())  # model version for /v2 generate answers

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
        """Metadata of a model with a deployment comes from its replica (the ingress loads no model)."""
        self.require_ready()
        return self._remote_model(name, version) or super().model(name, version)

    def model_versions(self, name: str) -> list[str]:
        served = self._remote_model(name, None)
        return [served.version] if served is not None else super().model_versions(name)

    def model_ready(self, name: str, version: str | None = None) -> bool:
        if self._state == "ready" and self._remote_model(name, version) is not None:
            return True
        return super().model_ready(name, version)

    async def _remote(self, handle_method: Any, what: str, *args: Any, retry: bool = False) -> dict[str, Any]:
        """Call a replica; when its replica is lost, call again (another replica), with `retry=True` when the
        method takes it (pipelines: an attempt already committed is answered as stored)."""
        last: BaseException | None = None
        for attempt in range(self.retries + 1):
            try:
                reply = await (
                    handle_method.remote(*args, retry=True) if attempt and retry else handle_method.remote(*args)
                )
            except Exception as exc:
                if not _replica_gone(exc):
                    raise
                last = exc
                log.warning(
                    "%s: replica lost (%s); attempt %d of %d", what, type(exc).__name__, attempt + 1, 1 + self.retries
                )
                await asyncio.sleep(min(0.05 * 2**attempt, 1.0))
                continue
            if "error" in reply and isinstance(reply["error"], dict) and "class" in reply["error"]:
                raise error_from_wire(reply["error"])
            return reply
        raise UnavailableError(
            f"{what}: the replica serving it was lost and {self.retries} retr{'y' if self.retries == 1 else 'ies'} "
            f"failed ({type(last).__name__}); nothing of it was recorded twice, retry later",
            1.0,
        )

    async def predict(
        self,
        name: str,
        inputs: dict[str, Any],
        *,
        version: str | None = None,
        explain: bool = False,
        timeout_s: float | None = None,
    ) -> dict[str, Any]:
        """`Serving.predict` on a pipeline replica (errors as there; UnavailableError when replicas keep dying)."""
        self._wb()
        run_id = str(uuid.uuid4())
        deadline = self._deadline(timeout_s)
        with self._admission().admit(name):
            reply = await with_deadline(
                self._remote(
                    self._pipelines.predict,
                    f"pipeline {name!r}",
                    run_id,
                    name,
                    inputs,
                    version,
                    explain,
                    deadline,
                    retry=True,
                ),
                deadline + 1.0,  # the replica enforces `deadline`; this bounds the hop
                f"pipeline {name!r}",
            )
        return reply["run"]

    async def predict_many(
        self,
        name: str,
        inputs: list[dict[str, Any]],
        *,
        version: str | None = None,
        explain: bool = False,
        timeout_s: float | None = None,
    ) -> list[dict[str, Any]]:
        """`Serving.predict_many` on one pipeline replica (one run id per input, chosen here)."""
        self._wb()
        run_ids = [str(uuid.uuid4()) for _ in inputs]
        deadline = self._deadline(timeout_s)
        with self._admission().admit(name, len(inputs)):
            reply = await with_deadline(
                self._remote(
                    self._pipelines.predict_many,
                    f"pipeline {name!r}",
                    run_ids,
                    name,
                    inputs,
                    version,
                    explain,
                    deadline,
                    retry=True,
                ),
                deadline + 1.0,
                f"pipeline {name!r}",
            )
        return reply["results"]

    async def infer(
        self, name: str, version: str | None, inputs: dict[str, Any], *, timeout_s: float | None = None
    ) -> InferenceOutput:
        """`Serving.infer` on the model's deployment (models without one run on the ingress)."""
        handle = self._model_handles.get(name)
        if handle is None:
            return await super().infer(name, version, inputs, timeout_s=timeout_s)
        deadline = self._deadline(timeout_s)
        reply = await with_deadline(
            self._remote(handle.infer, f"model {name!r}", version, inputs, deadline), deadline + 1.0, f"model {name!r}"
        )
        return InferenceOutput(reply["model"], reply["outputs"])


class Ingress:
    """The ingress deployment: the project's FastAPI app (`app(serving=RayServing, settings=...)`)."""

    def __init__(
        self,
        settings_doc: dict[str, Any],
        app: Callable[..., Any],
        pipelines: Any,
        models: dict,
        generation: Any = None,
    ) -> None:
        self.settings = Settings(**settings_doc)
        self.serving = RayServing(pipelines, models, self.settings, generation)
        self._app_factory = app

    def __serve_build_asgi_app__(self) -> Any:
        return self._app_factory(serving=self.serving, settings=self.settings)


@dataclass
class Deployment:
    """A running Ray Serve application (`deploy`).

    Attributes:
        url: base URL of the REST API on Ray Serve's HTTP proxy (`http://HOST:PORT[/PREFIX]`).
        name: the Serve application's name.
        replicas: pipeline replicas (None when autoscaling).
        models: model deployments by model name.
        lms: causal LMs served by the generation deployment.
    """

    url: str
    name: str
    replicas: int | None
    models: list[str] = field(default_factory=list)
    lms: list[str] = field(default_factory=list)

    def pipelines_handle(self) -> Any:
        """A DeploymentHandle of the pipeline deployment (scripts and tests call `predict` on it)."""
        return serve.get_deployment_handle("pipelines", app_name=self.name)

    def generation_handle(self) -> Any:
        """A DeploymentHandle of the generation deployment (`describe`, `stats(model)`, `generate`)."""
        return serve.get_deployment_handle("generation", app_name=self.name)

    def delete(self) -> None:
        """Remove the application from the cluster."""
        serve.delete(self.name)


def deploy(
    cluster: Cluster,
    *,
    app: Callable[..., Any],
    replicas: int | None = None,
    models: list[str] | None = None,
    batching: str = "serve",
    lms: list[str] | None = None,
    generation: dict[str, str] | None = None,
    name: str = "workbench",
    route_prefix: str = "/",
    timeout_s: float = 600.0,
) -> Deployment:
    """Deploy the REST API on a Ray cluster and wait until every replica is up.

    Args:
        cluster: from `workbench.scale.connect(...)`; its settings go to every replica.
        app: the FastAPI app factory, called in the ingress replica as `app(serving=..., settings=...)`
            (`api.app.create_app`: the same routes and OpenAPI document as `workbench serve`).
        replicas: pipeline replicas; None: `settings.ray.replicas`, or autoscaling between
            `min_replicas` and `max_replicas` at `target_ongoing_requests` when `settings.ray.autoscale`.
        models: one-shot models to deploy each as its own deployment (default: every catalogue model
            that is not a causal LM).
        batching: "serve" (default: Ray Serve's `@serve.batch` gathers whole requests, whose rows then go
            to the model's dynamic batcher together; measured 1.48x the requests/s of "workbench",
            docs/scaling.md) or "workbench" (each request's rows enter the project's batcher on their own).
        lms: catalogue causal LMs the generation deployment serves (default: every `causal-lm` entry of the
            catalogue whose folder exists); with `generation`, none and no folders: no generation deployment.
        generation: more causal LMs for the generation deployment, `{name: Hugging Face folder}` (a path
            every node reads). One replica per GPU of the cluster (each holding one), one without GPUs.
        name, route_prefix: the Serve application's name and URL prefix (several applications can share
            a cluster under different names and prefixes; their deployments are separate).
        timeout_s: most seconds to wait for the replicas to start.

    Returns:
        Deployment with the HTTP URL (Ray Serve's proxy: `settings.ray.http_host`, `http_port`).

    Raises:
        ScaleError (from `check_store`), ValueError (bad `batching`), TimeoutError (replicas did not start).
    """
    if batching not in ("workbench", "serve"):
        raise ValueError(f"batching={batching!r}: expected 'workbench' or 'serve'")
    s = cluster.settings
    rs = s.ray
    if models is None:
        models = _one_shot_models(s)
    serve.start(http_options={"host": rs.http_host, "port": rs.http_port})
    cluster.serving = True
    if lms is None:
        lms = _causal_lms(s)
    ingress = build_application(
        s, app=app, replicas=replicas, models=models, batching=batching, lms=lms, generation=generation
    )
    serve.run(ingress, name=name, route_prefix=route_prefix, blocking=False)
    t0 = time.monotonic()
    _wait_running(name, timeout_s)
    url = f"http://{rs.http_host}:{rs.http_port}{route_prefix.rstrip('/')}"
    _wait_ready(url, max(1.0, timeout_s - (time.monotonic() - t0)))
    return Deployment(
        url=url,
        name=name,
        replicas=None if (replicas is None and rs.autoscale) else (replicas or rs.replicas),
        models=list(models),
        lms=[*lms, *(generation or {})],
    )


def build_application(
    settings: Settings,
    *,
    app: Callable[..., Any],
    replicas: int | None = None,
    models: list[str] | None = None,
    batching: str = "serve",
    lms: list[str] | None = None,
    generation: dict[str, str] | None = None,
) -> Any:
    """The bound Ray Serve application (ingress -> pipelines, model-NAME) that `deploy` runs; also what a
    Serve config's `import_path` builder returns (`cli.serve_ray:app_builder`, KubeRay's RayService).
    Arguments as `deploy`; `settings` go to every replica."""
    if batching not in ("workbench", "serve"):
        raise ValueError(f"batching={batching!r}: expected 'workbench' or 'serve'")
    doc = settings.model_dump(mode="json")
    rs = settings.ray
    one_shot = _one_shot_models(settings)
    models = one_shot if models is None else models
    lms = _causal_lms(settings) if lms is None else lms
    gen_app = None
    if lms or generation:
        gen_opts = generation_options(settings, _cluster_gpus())
        gen_app = serve.deployment(GenerationReplica).options(**gen_opts).bind(doc, list(lms), dict(generation or {}))
    opts: dict[str, Any] = {
        "name": "pipelines",
        "max_ongoing_requests": rs.max_ongoing_requests,
        "ray_actor_options": {"num_cpus": rs.replica_cpus},
        "health_check_period_s": 2.0,
    }
    if replicas is None and rs.autoscale:
        opts["autoscaling_config"] = {
            "min_replicas": rs.min_replicas,
            "max_replicas": rs.max_replicas,
            "target_ongoing_requests": rs.target_ongoing_requests,
        }
    else:
        opts["num_replicas"] = replicas or rs.replicas
    pipelines = serve.deployment(PipelineReplica).options(**opts).bind(doc, one_shot, gen_app)
    model_apps = {
        m: serve.deployment(ModelReplica)
        .options(
            name=f"model-{m}",
            num_replicas=rs.model_replicas,
            max_ongoing_requests=256,
            ray_actor_options={"num_cpus": 0},
        )
        .bind(doc, m, batching)
        for m in models
    }
    return (
        serve.deployment(serve.ingress()(Ingress))
        .options(name="ingress", num_replicas=1, max_ongoing_requests=1024, ray_actor_options={"num_cpus": 0})
        .bind(doc, app, pipelines, model_apps, gen_app)
    )


def _cluster_gpus() -> float:
    import ray

    return float(ray.cluster_resources().get("GPU", 0)) if ray.is_initialized() else 0.0


def _causal_lms(settings: Settings) -> list[str]:
    """Catalogue models of task `causal-lm` whose folder is there (the generation deployment serves them)."""
    from pathlib import Path

    from workbench.facade.pipelines import default_model_catalog
    from workbench.pipeline.catalog import ModelCatalog

    specs = ModelCatalog(default_model_catalog()).specs()
    return sorted(n for n, e in specs.items() if e.task == "causal-lm" and Path(e.path).is_dir())


def _one_shot_models(settings: Settings) -> list[str]:
    from workbench.facade.pipelines import default_model_catalog
    from workbench.pipeline.catalog import ModelCatalog

    catalog = ModelCatalog(default_model_catalog())
    return sorted(n for n, e in catalog.specs().items() if (e.task or "") != "causal-lm")


def _wait_ready(url: str, timeout_s: float) -> None:
    """Until the ingress's `/readyz` answers 200 (its own `Workbench` loaded, model metadata fetched)."""
    import httpx

    deadline = time.monotonic() + timeout_s
    last = "no answer"
    while time.monotonic() < deadline:
        try:
            r = httpx.get(f"{url}/readyz", timeout=10.0)
            if r.status_code == 200:
                return
            last = f"{r.status_code} {r.text[:2000]}"
            if r.headers.get("content-type", "").startswith("application/json") and r.json().get("state") == "failed":
                raise RuntimeError(f"the ingress at {url} failed to start: {r.json().get('error')}")
        except httpx.HTTPError as exc:
            last = f"{type(exc).__name__}: {exc}"
        time.sleep(0.5)
    raise TimeoutError(f"the ingress at {url} is not ready after {timeout_s:g} s ({last})")


def _wait_running(name: str, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        status = serve.status().applications.get(name)
        state = str(getattr(status, "status", ""))
        if state.endswith("RUNNING"):
            return
        if state.endswith("DEPLOY_FAILED") or state.endswith("UNHEALTHY"):
            raise RuntimeError(f"Ray Serve application {name!r}: {state}: {getattr(status, 'message', '')}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"Ray Serve application {name!r} not running after {timeout_s:g} s ({state})")
        time.sleep(0.5)
