"""What the TUI needs from Workbench, behind one interface with two implementations.

- `InProcessBackend` calls the `Workbench` facade (`from workbench import Workbench`) in this
  process; it is what `workbench tui` uses by default.
- `HttpBackend` talks to a running `workbench serve` over HTTP (`workbench tui --url URL`).

Every method is synchronous and may block (rules, models, the store): screens call them from
Textual workers, never from the UI thread. Results are plain JSON-shaped data, the same shape
in both implementations, documented per method. Every failure is a `BackendError` whose
message is fit to show a person; located rule errors travel as `diagnostics`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC
from pathlib import Path
from typing import Any

JSON = dict[str, Any]


class BackendError(Exception):
    """A backend call failed; `str()` is the message for a person.

    Attributes:
        diagnostics: located problems `{"file", "line", "column", "message"}` (rule files) or
            `{"node", "field", "message"}` (pipelines), when the failure has them.
    """

    def __init__(self, message: str, diagnostics: list[JSON] | None = None):
        super().__init__(message)
        self.diagnostics = list(diagnostics or [])


@dataclass(slots=True)
class Question:
    """A question the backward prover asks a person during a consultation.

    Attributes:
        relation: the askable relation (template or ordered-fact name), e.g. "has-feathers".
        text: the question as the knowledge base phrases it.
        choices: allowed answers (e.g. ["yes", "no"]); empty means free text.
        why: the chain of goals that led to the question, innermost last, each a readable line
            (e.g. "(animal ?x)  by rule bird-is-animal") — shown when the person types WHY.
    """

    relation: str
    text: str
    choices: list[str] = field(default_factory=list)
    why: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.text:
            raise ValueError("Question.text must not be empty")


AskFn = Callable[[Question], str]
"""Called on a worker thread for each question; blocks until the person answers; returns the answer."""


class Backend(ABC):
    """The calls the TUI makes. All return JSON-shaped data; all raise `BackendError` on failure."""

    #: one line naming where the data comes from, shown in the header.
    description: str = ""
    #: True when writes are validated by the other side (a refused write carries the diagnostics).
    validates_on_write: bool = False

    def close(self) -> None:  # noqa: B027 (an optional hook: the default holds nothing)
        """Release what the backend holds (stores, model batchers, connections)."""

    # ---- knowledge bases ------------------------------------------------------------------
    @staticmethod
    def kb_name_for(path: str) -> str:
        """The knowledge base a rule file belongs to: `animals.clp` -> `animals`; a file in a
        folder belongs to the folder's knowledge base (`bench/manners.clp` -> `bench`)."""
        parts = path.split("/")
        return parts[0] if len(parts) > 1 else parts[0].removesuffix(".clp")

    @abstractmethod
    def list_kb_files(self) -> list[str]:
        """Rule files under the knowledge-base folder as POSIX paths relative to it, sorted."""

    @abstractmethod
    def read_kb_file(self, path: str) -> str:
        """Text of one rule file (`path` relative to the knowledge-base folder)."""

    @abstractmethod
    def write_kb_file(self, path: str, text: str) -> None:
        """Replace one rule file's text (atomically; nothing written outside the folder)."""

    @abstractmethod
    def check_kb(self, path: str, text: str) -> list[JSON]:
        """Diagnostics for one rule file's text, checked with the other files of its knowledge
        base: `[{"file", "line", "column", "message"}]` (1-based, for this file); [] when clean."""

    @abstractmethod
    def run_kb(
        self, name: str, facts: list[JSON], *, strategy: str | None = None, max_firings: int | None = None
    ) -> JSON:
        """Forward-chain knowledge base `name` on facts.

        `facts`: `[{"template": name, "slots": {...}}]` or `[{"template": name, "values": [...]}]`
        as `workbench kb run --facts` reads them. Returns `{"output": str, "firings": [{"rule",
        "facts": [ids]}], "facts": [{"id", "template", "slots"}]}` (final working memory).
        """

    @abstractmethod
    def consult(self, name: str, goal: str, facts: list[JSON], ask: AskFn, *, all_answers: bool = True) -> JSON:
        """Backward-chain `goal` (CLIPS pattern, e.g. "(animal ?x)") over knowledge base `name`,
        asking askable facts through `ask`.

        Returns `{"proved": bool, "answers": [{"bindings": {...}, "certainty": float | None,
        "proof": {...}, "how": str | None}], "skipped_rules": [...]}` (`how` = rendered HOW).
        """

    @abstractmethod
    def kb_source(self, name: str, version: str | None = None) -> str:
        """Rule text of knowledge base `name` (a recorded `version` when given and stored)."""

    # ---- pipelines -------------------------------------------------------------------------
    @abstractmethod
    def list_pipelines(self) -> list[JSON]:
        """`[{"name", "versions": int, "stages": {stage: version}, "latest", "file", "description"}]`."""

    @abstractmethod
    def get_pipeline(self, name: str, version: str | None = None) -> JSON:
        """A pipeline document (the YAML shape of docs/pipelines.md) as a dict."""

    @abstractmethod
    def pipeline_versions(self, name: str) -> list[JSON]:
        """`[{"version", "created_at", "stages": [..]}]`, newest first ([] when none stored)."""

    @abstractmethod
    def validate_pipeline(self, document: JSON) -> list[JSON]:
        """Problems `[{"node": id | None, "field": str, "message"}]`; [] when valid."""

    @abstractmethod
    def save_pipeline(self, document: JSON) -> JSON:
        """Validate and store a version: `{"name", "version", "created": bool}`."""

    @abstractmethod
    def promote_pipeline(self, name: str, version: str, stage: str) -> str:
        """Point stage `production` or `staging` at a stored version (rollback: an older one);
        returns the full version."""

    @abstractmethod
    def run_pipeline(self, name: str, inputs: JSON, version: str | None = None) -> JSON:
        """Run one input with explanation; `RunResult.to_dict()` shape: `{"run_id", "status",
        "outputs", "error", "failed_node", "explanation", "timings": {node: s, "total": s},
        "skipped", "knowledge_base_versions", "model_versions", ...}`."""

    # ---- models ----------------------------------------------------------------------------
    @abstractmethod
    def list_models(self) -> list[JSON]:
        """`[{"name", "version", "format", "task", "device", "loaded": bool}]`."""

    @abstractmethod
    def set_model_loaded(self, name: str, loaded: bool) -> None:
        """Load or unload a model."""

    @abstractmethod
    def model_stats(self) -> dict[str, JSON]:
        """Cumulative counters per model, sampled now: `{"requests", "latency_sum_s",
        "latency_count", "batch_sum", "batch_count", "kv_cache_usage" (0..1 or None)}`, plus
        `"generation_tokens"` and `"running"` for generative models; the screen turns
        differences between samples into rates."""

    # ---- runs ------------------------------------------------------------------------------
    @abstractmethod
    def list_runs(
        self, pipeline: str | None = None, status: str | None = None, since_s: float | None = None, limit: int = 200
    ) -> list[JSON]:
        """Recorded runs, newest first, `RunResult.to_dict()` shape; `since_s` keeps runs
        started at most that many seconds ago."""

    @abstractmethod
    def get_run(self, run_id: str) -> JSON:
        """One run (`RunResult.to_dict()` shape) plus `"trace": [{"seq", "kind", "node", "payload"}]`."""

    @abstractmethod
    def replay_run(self, run_id: str, kb_sources: dict[str, str]) -> JSON:
        """Re-run a recorded run with knowledge bases replaced by `{name: rule text}`:
        `{"original": run, "replay": run, "changes": {...}, "changed": bool}`."""


class InProcessBackend(Backend):
    """The `Workbench` facade in this process (the default for `workbench tui`).

    Rule files are listed, read and written here (plain files under the facade's
    `knowledge_base_dir`); everything else is a facade call.
    """

    def __init__(self, workbench: Any = None, *, kb_dir: Path | None = None):
        if workbench is None:
            from workbench import Workbench  # the only package the TUI imports from

            workbench = Workbench()
        self.wb = workbench
        self.kb_dir = Path(kb_dir) if kb_dir is not None else Path(workbench.knowledge_base_dir)
        self.description = f"in-process · {self.kb_dir}"

    def close(self) -> None:
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
        out = []
        for d in _call(self.wb, "check_knowledge_base", sources):
            d = _as_dict(d)
            if d.get("file") != path:  # a problem in another file of the same knowledge base
                d = {
                    **d,
                    "file": path,
                    "line": 1,
                    "column": 1,
                    "message": f"(in {d.get('file')}:{d.get('line')}:{d.get('column')}) {d.get('message')}",
                }
            out.append(d)
        return out

    def run_kb(self, name, facts, *, strategy=None, max_firings=None):
        return _as_dict(_call(self.wb, "run_knowledge_base", name, facts, strategy=strategy, max_firings=max_firings))

    def consult(self, name, goal, facts, ask, *, all_answers=True):
        return _as_dict(_call(self.wb, "ask", name, goal, facts, all=all_answers, provider=PersonProvider(ask)))

    def kb_source(self, name, version=None):
        if version is not None:
            row = self.wb.store.get_knowledge_base(name, version)
            if row is not None:
                return "\n".join(text for _, text in row.sources)
        kb = _call(self.wb, "get_knowledge_base", name)
        return kb.text

    # ---- pipelines -------------------------------------------------------------------------
    def list_pipelines(self):
        return [_as_dict(p) for p in _call(self.wb, "list_pipelines")]

    def get_pipeline(self, name, version=None):
        return _call(self.wb, "get_pipeline", name, version).to_data()

    def pipeline_versions(self, name):
        try:
            rows = self.wb.pipeline_versions(name)
        except Exception as exc:  # noqa: BLE001
            if type(exc).__name__ == "PipelineNotFoundError":
                return []  # only a file so far: no stored versions
            raise BackendError(f"{type(exc).__name__}: {exc}") from exc
        return list(reversed(rows))

    def _pipeline(self, document: JSON) -> Any:
        from workbench import Pipeline

        return Pipeline.from_data(document)

    def validate_pipeline(self, document):
        try:
            pipeline = self._pipeline(document)
        except Exception as exc:  # noqa: BLE001 - PipelineValidationError carries the issues
            issues = getattr(exc, "issues", None)
            if issues is None:
                raise BackendError(f"{type(exc).__name__}: {exc}") from exc
            return [_as_dict(i) for i in issues]
        return [_as_dict(i) for i in _call(self.wb, "validate", pipeline)]

    def save_pipeline(self, document):
        pipeline = _call(self, "_pipeline", document)
        before = {v["version"] for v in self.pipeline_versions(pipeline.name)}
        version = _call(self.wb, "save_pipeline", pipeline)
        return {"name": pipeline.name, "version": version, "created": version not in before}

    def promote_pipeline(self, name, version, stage):
        return _call(self.wb, "promote", name, version, stage)

    def run_pipeline(self, name, inputs, version=None):
        return _as_dict(_call(self.wb, "run_sync", name, inputs, version=version, explain=True))

    # ---- models ----------------------------------------------------------------------------
    def list_models(self):
        out = []
        for m in _call(self.wb, "list_models"):
            out.append(
                {
                    "name": m["name"],
                    "version": m.get("version"),
                    "format": m.get("format"),
                    "task": m.get("task"),
                    "device": str(m.get("device") or ("-" if not m.get("loaded") else "?")),
                    "loaded": bool(m.get("loaded")),
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
        from datetime import datetime, timedelta

        since = datetime.now(UTC) - timedelta(seconds=since_s) if since_s is not None else None
        if since is not None and _naive_times(self.wb):
            since = since.replace(tzinfo=None)
        runs = _call(self.wb, "list_runs", pipeline=pipeline, status=status, since=since, limit=limit)
        return [_as_dict(r) for r in runs]

    def get_run(self, run_id):
        run = _as_dict(_call(self.wb, "get_run", run_id))
        run["trace"] = _call(self.wb, "get_trace", run_id)
        return run

    def replay_run(self, run_id, kb_sources):
        return _as_dict(_call(self.wb, "replay_sync", run_id, knowledge_bases=dict(kb_sources)))


def _naive_times(wb: Any) -> bool:
    """SQLite hands back naive UTC datetimes; compare like with like."""
    return str(getattr(wb.store, "url", "")).startswith("sqlite")


def metric_samples(families: Any) -> dict[str, JSON]:
    """Per-model cumulative counters from Prometheus metric families (the registry's `collect()`
    or `prometheus_client.parser.text_string_to_metric_families` over `/metrics`)."""
    out: dict[str, JSON] = {}
    wanted = {
        "workbench_model_requests_total": "requests",
        "workbench_model_request_latency_seconds_sum": "latency_sum_s",
        "workbench_model_request_latency_seconds_count": "latency_count",
        "workbench_model_batch_size_sum": "batch_sum",
        "workbench_model_batch_size_count": "batch_count",
        "workbench_kv_cache_usage_perc": "kv_cache_usage",
        # generation engine (vLLM's terms): finished requests, end-to-end latency, tokens, running
        "workbench_request_success_total": "requests",
        "workbench_e2e_request_latency_seconds_sum": "latency_sum_s",
        "workbench_e2e_request_latency_seconds_count": "latency_count",
        "workbench_generation_tokens_total": "generation_tokens",
        "workbench_num_requests_running": "running",
    }
    for family in families:
        for sample in family.samples:
            key = wanted.get(sample.name)
            model = sample.labels.get("model")
            if key is None or not model:
                continue
            row = out.setdefault(
                model,
                {
                    "requests": 0.0,
                    "latency_sum_s": 0.0,
                    "latency_count": 0.0,
                    "batch_sum": 0.0,
                    "batch_count": 0.0,
                    "kv_cache_usage": None,
                },
            )
            if sample.name == "workbench_request_success_total":  # one series per finish reason
                row[key] += float(sample.value)
            else:
                row[key] = float(sample.value)
    return out


class PersonProvider:
    """The person answering a consultation, in the shape the backward prover takes (its
    `Provider` protocol: `source` and `async answer_batch(questions)`), and callable with one
    question for facades that take a plain callback. Questions are shown one at a time."""

    source = "person"

    def __init__(self, ask: AskFn):
        self.ask = ask

    def __call__(self, question: Any) -> str:
        return self.ask(as_question(question))

    async def answer_batch(self, questions: list[Any]) -> list[str]:
        import asyncio

        # `ask` blocks until the person answers: keep the prover's event loop free meanwhile.
        return [await asyncio.to_thread(self.ask, as_question(q)) for q in questions]


def as_question(q: Any) -> Question:
    """The prover's question (object or dict: relation, text, allowed, ask_slot, why) as a `Question`."""
    get = q.get if isinstance(q, dict) else (lambda k, d=None: getattr(q, k, d))
    allowed = get("allowed")
    choices = [str(c) for c in allowed] if allowed else []
    if not choices and get("ask_slot", "") is None:
        choices = ["yes", "no"]  # a yes/no question about a ground fact
    if choices and "unknown" not in choices:
        choices.append("unknown")
    why = get("why") or []
    why_lines = [str(w) for w in (why if isinstance(why, (list, tuple)) else str(why).splitlines())]
    return Question(relation=str(get("relation") or ""), text=str(get("text") or q), choices=choices, why=why_lines)


def _call(obj: Any, method: str, *args: Any, **kwargs: Any) -> Any:
    """Call a facade method, turning every failure into a BackendError a person can read."""
    fn = getattr(obj, method, None)
    if fn is None:
        raise BackendError(f"this Workbench has no {method}() yet (facade too old for this screen)")
    try:
        return fn(*args, **kwargs)
    except BackendError:
        raise
    except Exception as exc:  # noqa: BLE001 - every facade error becomes a notification, never a crash
        diagnostics = [_as_dict(d) for d in getattr(exc, "diagnostics", []) or getattr(exc, "issues", []) or []]
        raise BackendError(f"{type(exc).__name__}: {exc}", diagnostics) from exc


def _as_dict(value: Any) -> Any:
    """Facade results may be dataclasses or objects with `to_dict()`; the TUI wants plain data."""
    if value is None or isinstance(value, (dict, list, str, int, float, bool)):
        return value
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict):
        return to_dict()
    import dataclasses

    if dataclasses.is_dataclass(value):
        return dataclasses.asdict(value)
    return value
