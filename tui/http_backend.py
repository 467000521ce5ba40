"""`HttpBackend`: the TUI's backend over a running `workbench serve` (REST API, httpx).

Routes used (docs of `api/`): `/v1/pipelines`, `/v1/pipelines/{name}[/versions|/predict]`,
`/v1/kb`, `/v1/kb/{name}[/run|/ask]`, `/v1/runs[/{id}]`, `/v1/models` (generation models),
`/v2/models/{name}` (KServe metadata), `/metrics` (Prometheus text). The server validates on
write, so saving a pipeline or a rule file that does not validate comes back as a 422 whose
`details` become the located problems shown at the node or line. What the API does not offer
(checking rule text without saving it, a validate-only pipeline call, replay, loading or
unloading models, interactive questions) raises `BackendError` saying so.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import httpx
import yaml

from .backend import JSON, AskFn, Backend, BackendError, metric_samples


class HttpBackend(Backend):
    """Talks to `base_url` (e.g. http://127.0.0.1:8000); `client` may be given (tests pass one)."""

    validates_on_write = True

    def __init__(
        self, base_url: str, *, api_key: str | None = None, timeout_s: float = 60.0, client: httpx.Client | None = None
    ):
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.base_url = base_url.rstrip("/")
        self.client = client or httpx.Client(base_url=self.base_url, timeout=timeout_s, headers=headers)
        if client is not None and headers:
            self.client.headers.update(headers)
        self.description = f"http · {self.base_url}"
        self._kb_files: dict[str, tuple[str, str]] = {}  # relative path -> (kb name, server file)

    def close(self) -> None:
        self.client.close()

    # ---- transport -------------------------------------------------------------------------
    def _request(self, method: str, path: str, **kwargs: Any) -> Any:
        try:
            response = self.client.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise BackendError(f"{method} {self.base_url}{path}: {exc}") from exc
        if response.status_code >= 400:
            message, details = f"HTTP {response.status_code}", []
            try:
                body = response.json()
                error = body.get("error", body)
                if isinstance(error, dict):
                    message, details = error.get("message", message), error.get("details") or []
                else:
                    message = str(error)
            except ValueError:
                message = response.text[:200] or message
            raise BackendError(f"{method} {path}: {message}", [_detail(d) for d in details], response.status_code)
        if response.headers.get("content-type", "").startswith("application/json"):
            return response.json()
        return response.text

    def ping(self) -> None:
        """Check the server answers (`/healthz`); raises BackendError naming the URL otherwise."""
        self._request("GET", "/healthz")

    # ---- knowledge bases -------------------------------------------------------------------
    def list_kb_files(self) -> list[str]:
        self._kb_files.clear()
        for kb in self._request("GET", "/v1/kb")["knowledge_bases"]:
            files = kb.get("files") or []
            for server_file in files:
                base = server_file.replace("\\", "/").rsplit("/", 1)[-1]
                rel = f"{kb['name']}.clp" if len(files) == 1 else f"{kb['name']}/{base}"
                self._kb_files[rel] = (kb["name"], server_file)
            if not files:  # listed with errors only: still editable by name
                self._kb_files[f"{kb['name']}.clp"] = (kb["name"], "")
        return sorted(self._kb_files)

    def kb_name_for(self, path: str) -> str:  # type: ignore[override]
        known = self._kb_files.get(path)
        return known[0] if known else Backend.kb_name_for(path)

    def read_kb_file(self, path: str) -> str:
        name = self.kb_name_for(path)
        sources = self._request("GET", f"/v1/kb/{name}").get("sources") or []
        if len(sources) == 1:
            return sources[0]["text"]
        base = path.rsplit("/", 1)[-1]
        for source in sources:
            if source["file"].replace("\\", "/").rsplit("/", 1)[-1] == base:
                return source["text"]
        raise BackendError(f"{path}: not among the files of knowledge base {name}")

    def write_kb_file(self, path: str, text: str) -> None:
        if "/" in path:
            raise BackendError(f"{path}: the API uploads one-file knowledge bases only (PUT /v1/kb/NAME)")
        self._request("PUT", f"/v1/kb/{self.kb_name_for(path)}", json={"text": text})

    def check_kb(self, path: str, text: str) -> list[JSON]:
        raise BackendError(
            "the API has no check-only call: Ctrl+S uploads, and the server refuses invalid rules "
            "with their line and column"
        )

    def run_kb(self, name, facts, *, strategy=None, max_firings=None):
        body: dict[str, Any] = {"facts": facts}
        if strategy:
            body["strategy"] = strategy
        if max_firings is not None:
            body["max_firings"] = max_firings
        return self._request("POST", f"/v1/kb/{name}/run", json=body)

    def consult(self, name, goal, facts, ask: AskFn, *, all_answers=True):
        # The API cannot ask a person mid-proof: askable facts must come in `facts`.
        return self._request("POST", f"/v1/kb/{name}/ask", json={"goal": goal, "facts": facts, "all": all_answers})

    def kb_source(self, name, version=None):
        sources = self._request("GET", f"/v1/kb/{name}").get("sources") or []
        return "\n".join(s["text"] for s in sources)

    # ---- pipelines -------------------------------------------------------------------------
    def list_pipelines(self):
        return self._request("GET", "/v1/pipelines")["pipelines"]

    def get_pipeline(self, name, version=None):
        params = {"version": version} if version else {}
        doc = self._request("GET", f"/v1/pipelines/{name}", params=params)
        return yaml.safe_load(doc["document"])

    def pipeline_versions(self, name):
        try:
            return list(reversed(self._request("GET", f"/v1/pipelines/{name}/versions")["versions"]))
        except BackendError as exc:
            if exc.status == 404:
                return []
            raise

    def validate_pipeline(self, document):
        # No validate-only call: check the structure here; references are checked on save (422).
        from workbench import Pipeline

        try:
            pipeline = Pipeline.from_data(document)
        except Exception as exc:  # noqa: BLE001 - PipelineValidationError carries the issues
            issues = getattr(exc, "issues", None)
            if issues is None:
                raise BackendError(f"{type(exc).__name__}: {exc}") from exc
            return [i.to_dict() for i in issues]
        return [i.to_dict() for i in pipeline.check_structure()]

    def save_pipeline(self, document):
        from workbench import Pipeline

        text = Pipeline.from_data(document).to_yaml()
        return self._request("PUT", f"/v1/pipelines/{document['name']}", json={"document": text})

    def promote_pipeline(self, name, version, stage):
        return self._request("PUT", f"/v1/pipelines/{name}/stages/{stage}", json={"version": version})["version"]

    def run_pipeline(self, name, inputs, version=None):
        body: dict[str, Any] = {"input": inputs, "explain": True}
        if version:
            body["version"] = version
        return self._request("POST", f"/v1/pipelines/{name}/predict", json=body)

    # ---- models ----------------------------------------------------------------------------
    def list_models(self):
        out = []
        stats = self.model_stats()
        generation = {m["id"] for m in (self._request("GET", "/v1/models").get("data") or [])}
        for name in sorted(set(stats) | generation):
            try:
                meta = self._request("GET", f"/v2/models/{name}")
            except BackendError:
                meta = {}
            versions = meta.get("versions") or []
            out.append(
                {
                    "name": name,
                    "version": versions[0] if versions else None,
                    "format": meta.get("platform"),
                    "task": "generation" if name in generation else None,
                    "device": "server",
                    "loaded": bool(meta),
                }
            )
        return out

    def set_model_loaded(self, name, loaded):
        raise BackendError("loading and unloading models is not offered by the API (run the TUI in-process)")

    def model_stats(self):
        from prometheus_client.parser import text_string_to_metric_families

        return metric_samples(text_string_to_metric_families(self._request("GET", "/metrics")))

    # ---- runs ------------------------------------------------------------------------------
    def list_runs(self, pipeline=None, status=None, since_s=None, limit=200):
        params: dict[str, Any] = {"limit": min(limit, 1000)}
        if pipeline:
            params["pipeline"] = pipeline
        if status:
            params["status"] = status
        runs = self._request("GET", "/v1/runs", params=params)["runs"]
        if since_s is not None:
            cutoff = dt.datetime.now(dt.UTC) - dt.timedelta(seconds=since_s)
            runs = [r for r in runs if r.get("started_at") and _utc(r["started_at"]) >= cutoff]
        return runs

    def get_run(self, run_id):
        return self._request("GET", f"/v1/runs/{run_id}")

    def replay_run(self, run_id, kb_sources):
        raise BackendError("replay is not offered by the API yet (run the TUI in-process to replay)")


def _utc(text: str) -> dt.datetime:
    stamp = dt.datetime.fromisoformat(text)
    return stamp if stamp.tzinfo else stamp.replace(tzinfo=dt.UTC)


def _detail(d: Any) -> JSON:
    """An API error detail as a located problem: rule files (file/line/column) or pipelines (node/field)."""
    if not isinstance(d, dict):
        return {"message": str(d)}
    out = dict(d)
    out.setdefault("message", d.get("msg", ""))
    return out
