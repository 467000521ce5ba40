"""`deploy(...)`: the REST API as a Ray Serve application.

    Serve HTTP proxy     load-balances over the `pipelines` replicas; its middleware
    (or HAProxy)         (`workbench.scale.proxy`) names each request's run and retries a request
                         whose replica died (`WORKBENCH_RAY__INGRESS=haproxy`: HAProxy on each node with
                         the rules of `workbench.scale.haproxy`, each replica answering HTTP itself)
      pipelines (N)      the ingress: the same FastAPI app as `workbench serve` (same routes, same
                         OpenAPI document) around a `RayServing` that runs pipelines in-process
                         (`workbench.scale.ingress.Ingress`)
      -> model-NAME (M)  each one-shot model of the catalogue (`ModelReplica`): `POST /v2/models/NAME/infer`,
                         batched across the replicas
      -> generation (G)  the generation engine (`GenerationReplica`, one replica per GPU): the OpenAI routes,
                         `/v2/models/NAME/generate` and the pipelines' `generate` nodes stream from it
                         (`RemoteEngine`, workbench/scale/generation.py)

Every replica records runs in the one store of the settings' database URL, under the run id the proxy
chose, so a request retried on another replica (its replica died) is recorded once.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ray import serve

from workbench.config import Settings

from .cluster import Cluster
from .generation import GenerationReplica, generation_options
from .ingress import Ingress
from .replicas import ModelReplica

log = logging.getLogger("workbench.scale")

# an exception's name as a traceback's last line writes it: `SomeError`, `package.module.SomeError`
_EXCEPTION_NAME = re.compile(r"[A-Za-z_][\w.]*")


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
        app: the FastAPI app factory, called in each `pipelines` replica as `app(serving=..., settings=...)`
            (`api.app.create_app`: the same routes and OpenAPI document as `workbench serve`).
        replicas: `pipelines` replicas (each the API running pipelines in-process); None:
            `settings.ray.replicas`, or autoscaling between `min_replicas` and `max_replicas` at
            `target_ongoing_requests` when `settings.ray.autoscale`.
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
        ScaleError (from `check_store`; the `haproxy` ingress without an HAProxy binary, or with a loopback
        host on a cluster of several machines), ValueError (bad `batching`),
        StartupFailedError (a replica's start-up loading failed and Ray Serve gave up: the message names each
        failed deployment and its reason), TimeoutError (replicas did not start).
    """
    if batching not in ("workbench", "serve"):
        raise ValueError(f"batching={batching!r}: expected 'workbench' or 'serve'")
    s = cluster.settings
    rs = s.ray
    if models is None:
        models = _one_shot_models(s)
    if rs.ingress == "haproxy":
        from .haproxy import check_host

        check_host(rs.http_host, [n["address"] for n in cluster.nodes()])
    env = ingress_env(s, cluster.proxy_token)
    serve.start(
        http_options={"host": rs.http_host, "port": rs.http_port},
        controller_options={"runtime_env": {"env_vars": env}},
    )
    cluster.serving = True
    if lms is None:
        lms = _causal_lms(s)
    ingress = build_application(
        s,
        app=app,
        replicas=replicas,
        models=models,
        batching=batching,
        lms=lms,
        generation=generation,
        proxy_token=cluster.proxy_token,
    )
    try:  # waits until the application runs; Ray's RuntimeError on DEPLOY_FAILED does not say why
        serve.run(ingress, name=name, route_prefix=route_prefix, blocking=False)
    except RuntimeError:
        _raise_if_failed(name, serve.status().applications.get(name))
        raise
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


#: Ray Serve settings of ours for the controller `deploy` starts (`settings.ray.serve_env` overrides them).
CONTROLLER_DEFAULTS = {
    # Ray's 5 s: the controller kills a proxy whose readiness check takes longer, three times in a row, and
    # `serve.start` gives up after 60 s. On 2 cores at load average 6-17 (a test suite and three developers'
    # work) the proxy's worker took longer than that to start in 4 of 4 tries (2026-12-01); 30 s started it.
    "RAY_SERVE_PROXY_READY_CHECK_TIMEOUT_S": "30",
}


def ingress_env(settings: Settings, token: str) -> dict[str, str]:
    """Environment of the Serve controller that `deploy` starts (its proxies and replicas inherit it; ignored
    when a Serve instance already runs): `CONTROLLER_DEFAULTS`, `settings.ray.serve_env` (which overrides them)
    and the ingress's own variables.

    `serve_proxy`: Serve's Python HTTP proxy runs the middleware that names runs and retries requests whose
    replica was lost (`workbench.scale.proxy`). `haproxy`: Serve's HAProxy mode with the rules that do the same
    (`workbench.scale.haproxy`). Raises ScaleError (`haproxy` without an HAProxy binary)."""
    from .proxy import CALLBACK, RETRIES_ENV, TOKEN_ENV

    rs = settings.ray
    if rs.ingress == "haproxy":
        from .haproxy import controller_env

        return {**CONTROLLER_DEFAULTS, **rs.serve_env, **controller_env(token, rs.retries)}
    env = {
        **CONTROLLER_DEFAULTS,
        **rs.serve_env,
        "RAY_SERVE_HTTP_PROXY_CALLBACK_IMPORT_PATH": CALLBACK,
        TOKEN_ENV: token,
    }
    env[RETRIES_ENV] = str(rs.retries)
    return env


def build_application(
    settings: Settings,
    *,
    app: Callable[..., Any],
    replicas: int | None = None,
    models: list[str] | None = None,
    batching: str = "serve",
    lms: list[str] | None = None,
    generation: dict[str, str] | None = None,
    proxy_token: str | None = None,
) -> Any:
    """The bound Ray Serve application (`pipelines` as the ingress -> model-NAME, generation) that `deploy`
    runs; also what a Serve config's `import_path` builder returns (`cli.serve_ray:app_builder`, KubeRay's
    RayService). Arguments as `deploy`; `settings` go to every replica. `proxy_token`: the token of the
    proxies' middleware (`workbench.scale.proxy`), None when the proxies run without it (run ids are then
    chosen by the replicas and a request whose replica was lost is answered 500 by Serve)."""
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
    # a replica calls its model and generation handles from worker threads, which needs the router's own loop
    # (settings.ray.serve_env, inherited from the controller, may say otherwise for the proxies)
    env_vars = {**rs.pipelines_env, "RAY_SERVE_RUN_ROUTER_IN_SEPARATE_LOOP": "1"}
    opts["ray_actor_options"]["runtime_env"] = {"env_vars": env_vars}
    if replicas is None and rs.autoscale:
        opts["autoscaling_config"] = {
            "min_replicas": rs.min_replicas,
            "max_replicas": rs.max_replicas,
            "target_ongoing_requests": rs.target_ongoing_requests,
        }
    else:
        opts["num_replicas"] = replicas or rs.replicas
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
        .options(**opts)
        .bind(doc, app, model_apps, gen_app, one_shot, proxy_token)
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
    """Until the ingress's `/readyz` answers 200 (its own `Workbench` loaded, model metadata fetched).
    Raises StartupFailedError (`/readyz` says `failed`), TimeoutError."""
    import httpx

    from . import StartupFailedError

    deadline = time.monotonic() + timeout_s
    last = "no answer"
    while time.monotonic() < deadline:
        try:
            r = httpx.get(f"{url}/readyz", timeout=10.0)
            if r.status_code == 200:
                return
            last = f"{r.status_code} {r.text[:2000]}"
            if r.headers.get("content-type", "").startswith("application/json") and r.json().get("state") == "failed":
                raise StartupFailedError(f"the ingress at {url} failed to start: {r.json().get('error')}")
        except httpx.HTTPError as exc:
            last = f"{type(exc).__name__}: {exc}"
        time.sleep(0.5)
    raise TimeoutError(f"the ingress at {url} is not ready after {timeout_s:g} s ({last})")


def _wait_running(name: str, timeout_s: float) -> None:
    """Until the application `name` runs. Raises StartupFailedError (a deployment failed to start: each one's
    reason, `failure_reason`), TimeoutError."""
    deadline = time.monotonic() + timeout_s
    while True:
        status = serve.status().applications.get(name)
        if str(getattr(status, "status", "")).endswith("RUNNING"):
            return
        _raise_if_failed(name, status)
        if time.monotonic() > deadline:
            state = getattr(status, "status", None)
            raise TimeoutError(f"Ray Serve application {name!r} not running after {timeout_s:g} s ({state})")
        time.sleep(0.5)


def _raise_if_failed(name: str, status: Any) -> None:
    """Raise StartupFailedError naming why when the application's status (`ApplicationStatusOverview` or None)
    is DEPLOY_FAILED or UNHEALTHY."""
    from . import StartupFailedError

    state = str(getattr(status, "status", ""))
    if state.endswith(("DEPLOY_FAILED", "UNHEALTHY")):
        raise StartupFailedError(f"Ray Serve application {name!r} {state.rsplit('.', 1)[-1]}: {failure_reason(status)}")


def failure_reason(status: Any) -> str:
    """Why an application (Ray Serve's `ApplicationStatusOverview`) failed, one line:
    `deployment NAME: REASON; ...` for each failed deployment, REASON the last line of the error Ray kept (its
    replica's traceback ends with the exception, e.g. `StartupFailedError: ModelLoadError: ...`; the module path
    of the exception's name is dropped, and `StartupFailedError: `, whose message is the reason alone). The
    application's own message when no deployment says more."""
    parts = []
    for dep_name, dep in (getattr(status, "deployments", None) or {}).items():
        if str(getattr(dep, "status", "")).endswith(("DEPLOY_FAILED", "UNHEALTHY")):
            parts.append(f"deployment {dep_name}: {_last_error_line(str(getattr(dep, 'message', '')))}")
    return "; ".join(parts) or " ".join(str(getattr(status, "message", "")).split()) or "no reason given"


def _last_error_line(message: str) -> str:
    """The exception line of a traceback's text: the last line `Name: text` whose name is an exception's
    (`...Error`, `...Exception`) or a dotted path; lines an exception's text adds after it (SQLAlchemy's
    `[SQL: ...]` and `(Background on this error at: ...)`) are skipped. The last line when none matches."""
    from . import StartupFailedError

    lines = [line.strip() for line in message.splitlines() if line.strip()]
    if not lines:
        return "no reason given"
    for line in reversed(lines):
        head, sep, rest = line.partition(": ")
        if sep and _EXCEPTION_NAME.fullmatch(head) and ("." in head or head.endswith(("Error", "Exception"))):
            name = head.rsplit(".", 1)[-1]  # `package.module.SomeError: text` -> `SomeError: text`
            return rest if name == StartupFailedError.__name__ else f"{name}: {rest}"  # ours holds the reason alone
    return lines[-1]
