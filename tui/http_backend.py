"""`HttpBackend`: the TUI's backend over a running `workbench serve`, through the API's documents only.

It imports nothing of `workbench` (an import-linter contract in pyproject.toml says so): what the
TUI shows comes from the same routes any client uses (docs/api.md):

    /v1/pipelines[/{name}[/versions|/predict|/validate|/stages/{stage}]]   /v1/node-types
    /v1/kb[/{name}[/run|/check]]   /v1/consultations[/{id}[/answer|/why|/how]]
    /v1/scenarios[/file|/run]   /v1/decision-tables[/table]
    /v1/runs[/{id}[/replay]]   /v1/served-models   /v2/repository/models/{name}/load|unload
    /metrics (Prometheus text)   /healthz

The server validates on write, so a refused save comes back as a 422 whose `details` become the
located problems shown at the node or line. The backend also keeps the connection state the app
shows in its banner (connected / reconnecting / disconnected).
"""

from __future__ import annotations

import datetime as dt
import threading
import time
from typing import Any

import httpx
import yaml

from .backend import JSON, Backend, BackendError, ConsoleChannel, located_in
from .metric_samples import metric_samples

#: after this many seconds without an answer the banner says "disconnected" (before: "reconnecting")
DISCONNECTED_AFTER_S = 10.0
RECONNECT_HINT = "; the TUI reconnects by itself when it answers."


class HttpBackend(Backend):
    """Talks to `base_url` (e.g. http://127.0.0.1:8000); `client` may be given (tests pass one)."""

    validates_on_write = True
    remote = True
    console_runs = False

    def __init__(
        self, base_url: str, *, api_key: str | None = None, timeout_s: float = 60.0, client: httpx.Client | None = None
    ):
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.base_url = base_url.rstrip("/")
        self.client = client or httpx.Client(base_url=self.base_url, timeout=timeout_s, headers=headers)
        if client is not None and headers:
            self.client.headers.update(headers)
        self.description = f"http · {self.base_url}"
        self.metrics_scope = f"the server at {self.base_url}"
        self._kb_files: dict[str, tuple[str, str]] = {}  # relative path -> (kb name, server file)
        self._lock = threading.Lock()
        self._state, self._detail = "connected", ""
        self._failing_since: float | None = None

    def close(self) -> None:
        self.client.close()

    # ---- transport -------------------------------------------------------------------------
    def connection(self) -> JSON:
        with self._lock:
            return {"state": self._state, "detail": self._detail}

    def _reached(self) -> None:
        with self._lock:
            self._state, self._detail, self._failing_since = "connected", "", None

    def _unreachable(self, reason: str) -> str:
        now = time.monotonic()
        with self._lock:
            if self._failing_since is None:
                self._failing_since = now
            gone = now - self._failing_since >= DISCONNECTED_AFTER_S
            self._state = "disconnected" if gone else "reconnecting"
            self._detail = reason
        return (
            f"cannot reach the server at {self.base_url} ({reason}). Start it with `workbench serve` "
            f"or check --url{RECONNECT_HINT}"
        )

    def _request(self, method: str, path: str, **kwargs: Any) -> Any:
        try:
            response = self.client.request(method, path, **kwargs)
        except (httpx.TransportError, OSError) as exc:
            reason = str(exc) or type(exc).__name__
            if "refused" in reason.lower():
                reason = "connection refused"
            raise BackendError(self._unreachable(reason)) from exc
        self._reached()
        if response.status_code >= 400:
            raise self._refusal(method, path, response)
        if response.status_code == 204:
            return None
        if response.headers.get("content-type", "").startswith("application/json"):
            return response.json()
        return response.text

    def _refusal(self, method: str, path: str, response: httpx.Response) -> BackendError:
        message, details = f"HTTP {response.status_code}", []
        try:
            body = response.json()
            error = body.get("error", body) if isinstance(body, dict) else body
            if isinstance(error, dict):
                message, details = error.get("message", message), error.get("details") or []
            else:
                message = str(error)
        except ValueError:
            message = response.text[:200] or message
        hint = {
            401: " — the server wants an API key: start the TUI with --api-key KEY (or WORKBENCH_TUI_API_KEY)",
            429: " — the server is busy; try again in a moment",
            503: " — the server is not ready yet (loading models); try again in a moment",
        }.get(response.status_code, "")
        error = BackendError(f"{message}{hint}", [_detail(d) for d in details])
        error.status = response.status_code  # type: ignore[attr-defined]
        return error

    def ping(self, *, starting: bool = False) -> None:
        """Check the server answers (`/healthz`); raises BackendError naming the URL and what to do.
        `starting`: the check before the TUI opens, which then does not open (so the message does
        not promise a reconnection)."""
        try:
            self._request("GET", "/healthz")
        except BackendError as exc:
            if getattr(exc, "status", None) == 404:  # something answers, but not a workbench server's root
                raise BackendError(
                    f"{self.base_url} answers but has no /healthz: give the base URL of `workbench serve` "
                    "(http://HOST:PORT, without a path such as /v1 or /docs)"
                ) from exc
            if not starting or not str(exc).endswith(RECONNECT_HINT):
                raise
            raise BackendError(str(exc)[: -len(RECONNECT_HINT)] + ".") from exc.__cause__

    # ---- knowledge bases -------------------------------------------------------------------
    def list_kb_files(self) -> list[str]:
        files_of: dict[str, tuple[str, str]] = {}
        for kb in self._request("GET", "/v1/kb")["knowledge_bases"]:
            files = kb.get("files") or []
            for server_file in files:
                if server_file.lower().endswith((".csv", ".xlsx")):
                    continue  # decision tables: list_decision_tables
                base = server_file.replace("\\", "/").rsplit("/", 1)[-1]
                rel = f"{kb['name']}.clp" if len(files) == 1 else f"{kb['name']}/{base}"
                files_of[rel] = (kb["name"], server_file)
            if not files:  # listed with errors only: still editable by name
                files_of[f"{kb['name']}.clp"] = (kb["name"], "")
        self._kb_files = files_of
        return sorted(files_of)

    def kb_name_for(self, path: str) -> str:  # type: ignore[override]
        known = self._kb_files.get(path)
        return known[0] if known else Backend.kb_name_for(path)

    def _sources(self, name: str) -> list[JSON]:
        return self._request("GET", f"/v1/kb/{name}").get("sources") or []

    def read_kb_file(self, path: str) -> str:
        name = self.kb_name_for(path)
        sources = self._sources(name)
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
        name = self.kb_name_for(path)
        if "/" not in path:
            body: JSON = {"text": text}
        else:  # a folder knowledge base: checked with its other files, as saved on the server
            base = path.rsplit("/", 1)[-1]
            sources = []
            for s in self._sources(name):
                file = s["file"].replace("\\", "/").rsplit("/", 1)[-1]
                # each file as the server gives it: a decision table's CSV with format csv (a server
                # older than r12 gives its generated rules and no format: clips)
                fmt = "clips" if file == base else s.get("format", "clips")
                sources.append({"file": file, "text": text if file == base else s["text"], "format": fmt})
            if not any(s["file"] == base for s in sources):
                sources.append({"file": base, "text": text})
            body = {"sources": sources}
        found = self._request("POST", f"/v1/kb/{name}/check", json=body)["diagnostics"]
        found = [d for d in found if d.get("severity") != "warning"]  # as the in-process backend: errors only
        if "/" not in path:  # the server names a one-file knowledge base NAME.clp
            found = [{**d, "file": path} if d.get("file") == f"{name}.clp" else d for d in found]
        return located_in(path, found)

    def run_kb(self, name, facts, *, strategy=None, max_firings=None):
        body: dict[str, Any] = {"facts": facts}
        if strategy:
            body["strategy"] = strategy
        if max_firings is not None:
            body["max_firings"] = max_firings
        return self._request("POST", f"/v1/kb/{name}/run", json=body)

    def run_kb_source(self, run_id, name):
        return self._request("GET", f"/v1/runs/{run_id}/knowledge-bases/{name}")

    # ---- scenario files, decision tables, console programs -----------------------------------
    def list_scenario_files(self):
        return self._request("GET", "/v1/scenarios")["files"]

    def read_scenario_file(self, path):
        return self._request("GET", "/v1/scenarios/file", params={"file": path})["text"]

    def run_scenarios(self, path):
        return self._request("POST", "/v1/scenarios/run", json={"file": path})

    def list_decision_tables(self):
        return self._request("GET", "/v1/decision-tables")["files"]

    def decision_table(self, path):
        return self._request("GET", "/v1/decision-tables/table", params={"file": path})

    def run_kb_console(self, name, facts, console: ConsoleChannel):
        raise BackendError(
            "programs that read the console (read, readline) run only in the TUI's own process: "
            "a server refuses console input. Start `workbench tui` without --url, or run "
            f"`workbench kb run` on knowledge base {name} in a terminal."
        )

    # ---- consultations ---------------------------------------------------------------------
    def start_consultation(self, name, goal, facts, *, all_answers=False):
        body = {"knowledge_base": name, "goal": goal, "facts": facts, "all": all_answers, "wait_s": 30.0}
        return self._request("POST", "/v1/consultations", json=body)

    def consultation(self, consultation_id, *, after=None, wait_s=5.0):
        params: dict[str, Any] = {} if after is None else {"after": after, "wait_s": wait_s}
        return self._request("GET", f"/v1/consultations/{consultation_id}", params=params)

    def answer_consultation(self, consultation_id, answer, question=None):
        body: dict[str, Any] = {"answer": answer, "wait_s": 30.0}
        if question is not None:
            body["question"] = question
        return self._request("POST", f"/v1/consultations/{consultation_id}/answer", json=body)

    def consultation_why(self, consultation_id):
        return self._request("GET", f"/v1/consultations/{consultation_id}/why")

    def consultation_how(self, consultation_id, answer=1):
        return self._request("GET", f"/v1/consultations/{consultation_id}/how", params={"answer": answer})

    def stop_consultation(self, consultation_id):
        self._request("DELETE", f"/v1/consultations/{consultation_id}")

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
            if getattr(exc, "status", None) == 404:
                return []  # only a file so far: no stored versions
            raise

    def validate_pipeline(self, document):
        name = str(document.get("name") or "-")
        return self._request("POST", f"/v1/pipelines/{name}/validate", json={"document": document})["issues"]

    def save_pipeline(self, document):
        text = yaml.safe_dump(document, sort_keys=False, allow_unicode=True)
        return self._request("PUT", f"/v1/pipelines/{document['name']}", json={"document": text})

    def promote_pipeline(self, name, version, stage):
        return self._request("PUT", f"/v1/pipelines/{name}/stages/{stage}", json={"version": version})["version"]

    def run_pipeline(self, name, inputs, version=None):
        body: dict[str, Any] = {"input": inputs, "explain": True}
        if version:
            body["version"] = version
        return self._request("POST", f"/v1/pipelines/{name}/predict", json=body)

    def node_types(self):
        return self._request("GET", "/v1/node-types")

    # ---- models ----------------------------------------------------------------------------
    def list_models(self):
        return self._request("GET", "/v1/served-models")["models"]

    def set_model_loaded(self, name, loaded):
        self._request("POST", f"/v2/repository/models/{name}/{'load' if loaded else 'unload'}")

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
        return self._request("POST", f"/v1/runs/{run_id}/replay", json={"knowledge_bases": dict(kb_sources)})


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
