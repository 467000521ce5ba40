"""`InProcessBackend`: the TUI's backend over the `Workbench` facade in this process (the default).

Rule files are listed, read and written here (plain files under the facade's
`knowledge_base_dir`); everything else is a facade call, or one of the small pieces the API
serves from the same functions (consultations, the replay changes table), so both backends
answer alike.
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from .backend import JSON, Backend, BackendError, ConsoleChannel, located_in
from .metric_samples import metric_samples


class InProcessBackend(Backend):
    """The `Workbench` facade in this process; `workbench=None` builds one from the settings."""

    metrics_scope = "this process only (attach with --url to see a server's)"

    def __init__(self, workbench: Any = None, *, kb_dir: Path | None = None):
        if workbench is None:
            from workbench import Workbench

            workbench = Workbench()
        self.wb = workbench
        self.kb_dir = Path(kb_dir) if kb_dir is not None else Path(workbench.knowledge_base_dir)
        self.description = f"in-process · {self.kb_dir}"
        self._consultations: Any = None

    def close(self) -> None:
        if self._consultations is not None:
            self._consultations.close()
        self.wb.close()

    # ---- knowledge bases -------------------------------------------------------------------
    def list_kb_files(self) -> list[str]:
        if not self.kb_dir.is_dir():
            raise BackendError(f"knowledge-base folder {self.kb_dir} does not exist")
        return sorted(p.relative_to(self.kb_dir).as_posix() for p in self.kb_dir.rglob("*.clp"))

    def _resolve(self, path: str) -> Path:
        full = (self.kb_dir / path).resolve()
        if self.kb_dir.resolve() not in full.parents:
            raise BackendError(f"{path}: outside the knowledge-base folder {self.kb_dir}")
        return full

    def read_kb_file(self, path: str) -> str:
        try:
            return self._resolve(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise BackendError(f"{path}: cannot read ({exc.strerror})") from exc

    def write_kb_file(self, path: str, text: str) -> None:
        target = self._resolve(path)
        tmp = target.with_suffix(target.suffix + ".tmp")
        try:
            tmp.write_text(text, encoding="utf-8")
            tmp.replace(target)  # atomic: a failed write never leaves half a file
        except OSError as exc:
            raise BackendError(f"{path}: cannot write ({exc.strerror})") from exc

    def check_kb(self, path: str, text: str) -> list[JSON]:
        # A file in a folder belongs to the folder's knowledge base: check it with its siblings
        # (saved text) in load order, so templates defined next door are known.
        siblings = [path]
        if "/" in path:
            folder = path.rsplit("/", 1)[0]
            siblings = [p for p in self.list_kb_files() if p.rsplit("/", 1)[0] == folder] or [path]
        sources = [(p, text if p == path else self.read_kb_file(p)) for p in siblings]
        return located_in(path, [_as_dict(d) for d in _call(self.wb, "check_knowledge_base", sources)])

    def run_kb(self, name, facts, *, strategy=None, max_firings=None):
        return _as_dict(_call(self.wb, "run_knowledge_base", name, facts, strategy=strategy, max_firings=max_firings))

    def run_kb_source(self, run_id, name):
        from workbench.pipeline import replay

        return _call(replay, "recorded_knowledge_base", self.wb, run_id, name)

    # ---- scenario files, decision tables, console programs -----------------------------------
    def list_scenario_files(self):
        from workbench import rule_files

        return rule_files.scenario_files(self.kb_dir)

    def read_scenario_file(self, path):
        from workbench import rule_files

        return _call(rule_files, "read_scenario_file", self.kb_dir, path)

    def run_scenarios(self, path):
        from workbench import rule_files

        return _call(rule_files, "run_scenario_file", self.kb_dir, path, allow_unsafe=self.wb.library.allow_unsafe)

    def list_decision_tables(self):
        from workbench import rule_files

        return rule_files.decision_tables(self.kb_dir)

    def decision_table(self, path):
        from workbench import rule_files

        return _call(rule_files, "decision_table", self.kb_dir, path, allow_unsafe=self.wb.library.allow_unsafe)

    def run_kb_console(self, name, facts, console: ConsoleChannel):
        """As `workbench kb run` (`workbench.rule_files.run_console_program`), `console` as its terminal."""
        from workbench import rule_files

        return _as_dict(
            _call(rule_files, "run_console_program", self.wb.library, name, facts, input=console, output=console)
        )

    # ---- consultations ---------------------------------------------------------------------
    def _registry(self) -> Any:
        if self._consultations is None:
            from workbench.consultation import Consultations

            self._consultations = Consultations(self.wb)
        return self._consultations

    def _consultation(self, consultation_id: str) -> Any:
        return _call(self._registry(), "get", consultation_id)

    def start_consultation(self, name, goal, facts, *, all_answers=False):
        c = _call(self._registry(), "start", name, goal, facts, all_answers=all_answers, wait_s=30.0)
        if c.state == "failed" and c.exception is not None and not c.transcript:
            self._registry().delete(c.id)
            raise BackendError(c.error or "the consultation failed", _diagnostics(c.exception))
        return c.snapshot()

    def consultation(self, consultation_id, *, after=None, wait_s=5.0):
        c = self._consultation(consultation_id)
        return c.snapshot() if after is None else c.wait(after, wait_s)

    def answer_consultation(self, consultation_id, answer, question=None):
        c = self._consultation(consultation_id)
        _call(c, "answer", answer, question)
        return c.wait_for_person(30.0)

    def consultation_why(self, consultation_id):
        return _call(self._consultation(consultation_id), "why")

    def consultation_how(self, consultation_id, answer=1):
        return _call(self._consultation(consultation_id), "how", answer)

    def stop_consultation(self, consultation_id):
        _call(self._registry(), "delete", consultation_id)

    # ---- pipelines -------------------------------------------------------------------------
    def list_pipelines(self):
        return [_as_dict(p) for p in _call(self.wb, "list_pipelines")]

    def get_pipeline(self, name, version=None):
        return _call(self.wb, "get_pipeline", name, version).to_data()

    def pipeline_versions(self, name):
        from workbench.pipeline.errors import PipelineNotFoundError

        try:
            rows = self.wb.pipeline_versions(name)
        except PipelineNotFoundError:
            return []  # only a file so far: no stored versions
        except Exception as exc:  # noqa: BLE001
            raise BackendError(f"{type(exc).__name__}: {exc}") from exc
        return list(reversed(rows))

    def _pipeline(self, document: JSON) -> Any:
        from workbench import Pipeline

        return Pipeline.from_data(document)

    def validate_pipeline(self, document):
        from workbench.pipeline.errors import PipelineValidationError

        try:
            pipeline = self._pipeline(document)
            return [_as_dict(i) for i in self.wb.validate(pipeline)]
        except PipelineValidationError as exc:
            return [_as_dict(i) for i in exc.issues]
        except Exception as exc:  # noqa: BLE001
            raise BackendError(f"{type(exc).__name__}: {exc}") from exc

    def save_pipeline(self, document):
        pipeline = _call(self, "_pipeline", document)
        before = {v["version"] for v in self.pipeline_versions(pipeline.name)}
        version = _call(self.wb, "save_pipeline", pipeline)
        return {"name": pipeline.name, "version": version, "created": version not in before}

    def promote_pipeline(self, name, version, stage):
        return _call(self.wb, "promote", name, version, stage)

    def run_pipeline(self, name, inputs, version=None):
        return _as_dict(_call(self.wb, "run_sync", name, inputs, version=version, explain=True))

    def node_types(self):
        from workbench.pipeline.spec import COMMON_FIELDS, NODE_FIELDS, NODE_TYPES, REQUIRED_FIELDS

        return {
            "common": list(COMMON_FIELDS),
            "types": [
                {"type": t, "fields": list(NODE_FIELDS.get(t, ())), "required": list(REQUIRED_FIELDS.get(t, ()))}
                for t in NODE_TYPES
            ],
        }

    # ---- models ----------------------------------------------------------------------------
    def list_models(self):
        out = []
        for m in _call(self.wb, "list_models"):
            loaded = bool(m.get("loaded"))
            out.append(
                {
                    "name": m["name"],
                    "kind": "generation" if m.get("task") == "generation" else "tensor",
                    "version": str(m["version"])[:12] if m.get("version") else None,
                    "format": m.get("format"),
                    "task": m.get("task"),
                    "device": str(m["device"]) if m.get("device") else None,
                    "state": "READY" if loaded else "UNAVAILABLE",
                    "loaded": loaded,
                }
            )
        return out

    def set_model_loaded(self, name, loaded):
        if loaded:
            _call(self.wb, "get_model", name)  # loads on first use
            return
        if not _call(self.wb, "unload_model", name):
            raise BackendError(f"model {name} is not loaded")

    def model_stats(self):
        return metric_samples(self.wb.metrics_registry.collect())

    # ---- runs ------------------------------------------------------------------------------
    def list_runs(self, pipeline=None, status=None, since_s=None, limit=200):
        since = datetime.now(UTC) - timedelta(seconds=since_s) if since_s is not None else None
        if since is not None and str(getattr(self.wb.store, "url", "")).startswith("sqlite"):
            since = since.replace(tzinfo=None)  # SQLite hands back naive UTC datetimes
        runs = _call(self.wb, "list_runs", pipeline=pipeline, status=status, since=since, limit=limit)
        return [_as_dict(r) for r in runs]

    def get_run(self, run_id):
        run = _as_dict(_call(self.wb, "get_run", run_id))
        run["trace"] = _call(self.wb, "get_trace", run_id)
        return run

    def replay_run(self, run_id, kb_sources):
        from workbench.pipeline.replay import changes_table

        result = _as_dict(_call(self.wb, "replay_sync", run_id, knowledge_bases=dict(kb_sources)))
        return {**result, "table": changes_table(result.get("changes") or {})}


def _diagnostics(exc: BaseException) -> list[JSON]:
    found = getattr(exc, "diagnostics", None) or getattr(exc, "issues", None) or []
    return [_as_dict(d) for d in found]


def _call(obj: Any, method: str, *args: Any, **kwargs: Any) -> Any:
    """Call a facade method, turning every failure into a BackendError a person can read."""
    try:
        return getattr(obj, method)(*args, **kwargs)
    except BackendError:
        raise
    except Exception as exc:  # noqa: BLE001 - every facade error becomes a notification, never a crash
        raise BackendError(f"{type(exc).__name__}: {exc}", _diagnostics(exc)) from exc


def _as_dict(value: Any) -> Any:
    """Facade results may be dataclasses or objects with `to_dict()`; the TUI wants plain data."""
    if value is None or isinstance(value, (dict, list, str, int, float, bool)):
        return value
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict):
        return to_dict()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return value
