"""Model management: status of every served model, and loading or unloading one.

    GET  /v1/served-models                     every model with kind, task, state and version
    POST /v2/repository/models/{name}/load     load now (Triton's model-repository extension; key-protected)
    POST /v2/repository/models/{name}/unload   drain its batcher and release it (key-protected)

Models loaded at start-up are listed as READY with their version before they serve a request;
generation models (the OpenAI-compatible engines) are listed too and are served from start-up to
shutdown, so loading or unloading one answers 409.
"""

from __future__ import annotations

from fastapi import APIRouter

from workbench.serving.errors import ConflictError, NotFoundError, call

from ..deps import WRITE_KEY, ServingDep
from ..errors import V1_ERRORS, V2_ERRORS
from ..schemas.tools import ModelActionResponse, ServedModelsResponse, ServedModelStatus
from .tools_common import workbench_of

router = APIRouter(tags=["models"])


def _short(version: object) -> str | None:
    return str(version)[:12] if version else None


@router.get(
    "/v1/served-models",
    operation_id="list_served_models",
    summary="Every served model: kind, task, state (READY, LOADING, UNAVAILABLE), version, device.",
    response_model=ServedModelsResponse,
    responses=V1_ERRORS,
)
async def served_models(serving: ServingDep) -> ServedModelsResponse:
    readiness = serving.readiness()
    state = readiness["state"]
    rows: dict[str, ServedModelStatus] = {}
    if state == "ready":
        wb = serving.workbench
        catalogue = {m["name"]: m for m in (await call(wb.list_models) if wb is not None else [])}
        for name in serving.model_names():
            meta = catalogue.get(name, {})
            loaded = bool(meta.get("loaded"))
            loading = not loaded and serving.model_loading(name)
            served = None
            if name in readiness["models"]:
                served, loaded = serving.model(name), True
            rows[name] = ServedModelStatus(
                name=name,
                kind="tensor",
                task=(served.task if served else None) or meta.get("task"),
                state=_state(served, loading),
                loaded=loaded,
                version=served.version if served else _short(meta.get("version")),
                format=(served.platform if served else None) or meta.get("format"),
                device=str(meta["device"]) if meta.get("device") else None,
                reason=""
                if loaded
                else "loading"
                if loading
                else "not loaded (loads on first use or with POST .../load)",
            )
        for g in serving.generation_models():
            rows[g["name"]] = ServedModelStatus(
                name=g["name"],
                kind="generation",
                task="generation",
                state="READY",
                loaded=True,
                version=serving.model_versions(g["name"])[0],
                format="hf",
                device=g.get("device"),
            )
    return ServedModelsResponse(server_state=state, models=sorted(rows.values(), key=lambda m: m.name))


def _state(served: object, loading: bool) -> str:
    if served is not None and getattr(served, "ready", False):
        return "READY"
    return "LOADING" if loading else "UNAVAILABLE"


def _check_tensor_model(serving, name: str) -> None:
    if name in {g["name"] for g in serving.generation_models()}:
        raise ConflictError(f"{name} is a generation model: it is served from start-up to shutdown")
    if name not in serving.model_names():
        raise NotFoundError("model", name, serving.model_names())


@router.post(
    "/v2/repository/models/{name}/load",
    operation_id="v2_repository_model_load",
    summary="Load a catalogue model now (a no-op when it is loaded).",
    dependencies=[WRITE_KEY],
    response_model=ModelActionResponse,
    responses=V2_ERRORS,
)
async def load_model(name: str, serving: ServingDep) -> ModelActionResponse:
    wb = workbench_of(serving)
    _check_tensor_model(serving, name)
    entry = await call(wb.get_model, name)
    return ModelActionResponse(name=name, loaded=True, version=_short(getattr(entry, "version", None)))


@router.post(
    "/v2/repository/models/{name}/unload",
    operation_id="v2_repository_model_unload",
    summary="Drain a model's batcher and release it (it stays unloaded until a load request).",
    dependencies=[WRITE_KEY],
    response_model=ModelActionResponse,
    responses=V2_ERRORS,
)
async def unload_model(name: str, serving: ServingDep) -> ModelActionResponse:
    wb = workbench_of(serving)
    _check_tensor_model(serving, name)
    if not await call(wb.unload_model, name):
        raise ConflictError(f"model {name} is not loaded")
    return ModelActionResponse(name=name, loaded=False)
