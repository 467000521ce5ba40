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

import threading
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

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

    # ---- knowledge bases ------------------------------------------------------------------
    @abstractmethod
    def list_kb_files(self) -> list[str]:
        """Rule files under the knowledge-base folder as POSIX paths relative to it, sorted."""

    @abstractmethod
    def read_kb_file(self, path: str) -> str:
        """Text of one rule file (`path` relative to the knowledge-base folder)."""

    @abstractmethod
    def write_kb_file(self, path: str, text: str) -> None:
        """Replace one rule file's text (nothing written when the path is outside the folder)."""

    @abstractmethod
    def check_kb(self, path: str, text: str) -> list[JSON]:
        """Diagnostics for one rule file's text: `[{"file", "line", "column", "message"}]` (1-based); [] when clean."""

    @abstractmethod
    def run_kb(self, paths: list[str], facts: list[JSON], *, strategy: str | None = None,
               max_firings: int | None = None) -> JSON:
        """Forward-chain rule files on facts.

        `facts`: `[{"template": name, "slots": {...}}]` or `[{"relation": name, "values": [...]}]`
        as `workbench kb run --facts` reads them. Returns `{"output": str, "firings": [{"rule",
        "facts": [ids]}], "facts": [{"id", "template", "slots"}]}` (final working memory).
        """

    @abstractmethod
    def consult(self, paths: list[str], goal: str, facts: list[JSON], ask: AskFn, *,
                all_answers: bool = False) -> JSON:
        """Backward-chain `goal` (CLIPS pattern, e.g. "(animal ?x)"), asking askable facts through `ask`.

        Returns `{"answers": [{"bindings": {...}, "certainty": float | None, "proof": {...},
        "how": str}], "skipped_rules": [...]}` where `how` is the rendered HOW explanation.
        """

    # ---- pipelines -------------------------------------------------------------------------
    @abstractmethod
    def list_pipelines(self) -> list[JSON]:
        """`[{"name", "version", "stages": {stage: version}, "description"}]`, by name."""

    @abstractmethod
    def get_pipeline(self, name: str, version: str | None = None) -> JSON:
        """A pipeline document (the YAML shape of docs/pipelines.md) as a dict."""

    @abstractmethod
    def pipeline_versions(self, name: str) -> list[JSON]:
        """`[{"version", "created_at", "stages": [..]}]`, newest first."""

    @abstractmethod
    def validate_pipeline(self, document: JSON) -> list[JSON]:
        """Problems `[{"node": id | None, "field": str | None, "message"}]`; [] when valid."""

    @abstractmethod
    def save_pipeline(self, document: JSON) -> JSON:
        """Validate and store a new version: `{"name", "version", "created": bool}`."""

    @abstractmethod
    def run_pipeline(self, name: str, inputs: JSON, version: str | None = None) -> JSON:
        """Run one input with explanation: `{"run_id", "status", "outputs", "explanation",
        "timings_ms": {node: ms}, "error"}`."""

    # ---- models ----------------------------------------------------------------------------
    @abstractmethod
    def list_models(self) -> list[JSON]:
        """`[{"name", "version", "format", "task", "device", "loaded": bool}]`."""

    @abstractmethod
    def set_model_loaded(self, name: str, loaded: bool) -> JSON:
        """Load or unload a model; returns its row as in `list_models`."""

    @abstractmethod
    def model_stats(self) -> dict[str, JSON]:
        """Per model: `{"requests", "throughput_rps", "latency_p50_ms", "mean_batch_size",
        "kv_cache_usage" (0..1 or None)}` — cumulative counters sampled now."""

    # ---- runs ------------------------------------------------------------------------------
    @abstractmethod
    def list_runs(self, pipeline: str | None = None, status: str | None = None,
                  since_s: float | None = None, limit: int = 200) -> list[JSON]:
        """Recorded runs, newest first: `[{"id", "pipeline", "pipeline_version", "status",
        "started_at", "duration_ms"}]`; `since_s` keeps runs younger than that many seconds."""

    @abstractmethod
    def get_run(self, run_id: str) -> JSON:
        """One run with provenance: `{"id", "pipeline", "pipeline_version", "status", "inputs",
        "outputs", "error", "versions": {"knowledge_bases": {..}, "models": {..}},
        "explanation", "timings_ms", "events": [..]}`."""

    @abstractmethod
    def replay_run(self, run_id: str, kb_sources: dict[str, str]) -> JSON:
        """Re-run a recorded run with knowledge bases replaced by `{kb name: rule text}`:
        `{"run": <get_run shape>, "changes": [{"path", "before", "after"}]}`."""


class InProcessBackend(Backend):
    """The `Workbench` facade in this process (the default for `workbench tui`)."""

    def __init__(self, workbench: Any = None, *, kb_dir: Path | None = None):
        if workbench is None:
            from workbench import Workbench  # the only package the TUI imports from

            workbench = Workbench()
        self.wb = workbench
        self.kb_dir = Path(kb_dir) if kb_dir is not None else _kb_dir(self.wb)
        self.description = f"in-process · {self.kb_dir}"
        self._lock = threading.Lock()

    # ---- knowledge bases: files are read here, checking and running go through the facade --
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
            return self._resolve(path).read_text()
        except OSError as exc:
            raise BackendError(f"{path}: cannot read ({exc.strerror})") from exc

    def write_kb_file(self, path: str, text: str) -> None:
        target = self._resolve(path)
        tmp = target.with_suffix(target.suffix + ".tmp")
        try:
            tmp.write_text(text)
            tmp.replace(target)  # atomic: a failed write never leaves half a file
        except OSError as exc:
            raise BackendError(f"{path}: cannot write ({exc.strerror})") from exc

    def check_kb(self, path: str, text: str) -> list[JSON]:
        diags = _call(self.wb, "check_kb", [(path, text)])
        return [_as_dict(d) for d in diags]

    def run_kb(self, paths, facts, *, strategy=None, max_firings=None):
        files = [str(self._resolve(p)) for p in paths]
        result = _call(self.wb, "run_kb", files, facts=facts, strategy=strategy, max_firings=max_firings)
        return _as_dict(result)

    def consult(self, paths, goal, facts, ask, *, all_answers=False):
        files = [str(self._resolve(p)) for p in paths]
        result = _call(self.wb, "ask_kb", files, goal, facts=facts, ask=ask, all_answers=all_answers)
        return _as_dict(result)

    # ---- pipelines -------------------------------------------------------------------------
    def list_pipelines(self):
        return [_as_dict(p) for p in _call(self.wb, "list_pipelines")]

    def get_pipeline(self, name, version=None):
        return _as_dict(_call(self.wb, "get_pipeline_document", name, version=version))

    def pipeline_versions(self, name):
        return [_as_dict(v) for v in _call(self.wb, "pipeline_versions", name)]

    def validate_pipeline(self, document):
        return [_as_dict(p) for p in _call(self.wb, "validate_pipeline_document", document)]

    def save_pipeline(self, document):
        return _as_dict(_call(self.wb, "save_pipeline_document", document))

    def run_pipeline(self, name, inputs, version=None):
        return _as_dict(_call(self.wb, "run", name, inputs, version=version, explain=True))

    # ---- models ----------------------------------------------------------------------------
    def list_models(self):
        return [_as_dict(m) for m in _call(self.wb, "list_models")]

    def set_model_loaded(self, name, loaded):
        return _as_dict(_call(self.wb, "load_model" if loaded else "unload_model", name))

    def model_stats(self):
        return {k: _as_dict(v) for k, v in _call(self.wb, "model_stats").items()}

    # ---- runs ------------------------------------------------------------------------------
    def list_runs(self, pipeline=None, status=None, since_s=None, limit=200):
        return [_as_dict(r) for r in _call(self.wb, "list_runs", pipeline=pipeline, status=status,
                                            since_s=since_s, limit=limit)]

    def get_run(self, run_id):
        return _as_dict(_call(self.wb, "get_run", run_id))

    def replay_run(self, run_id, kb_sources):
        return _as_dict(_call(self.wb, "replay", run_id, kb_sources=kb_sources))


def _kb_dir(wb: Any) -> Path:
    path = getattr(wb, "knowledge_base_dir", None)
    if path is None:
        raise BackendError("the Workbench facade does not say where knowledge bases live (knowledge_base_dir)")
    return Path(path)


def _call(wb: Any, method: str, *args: Any, **kwargs: Any) -> Any:
    """Call a facade method, turning every failure into a BackendError a person can read."""
    fn = getattr(wb, method, None)
    if fn is None:
        raise BackendError(f"this Workbench has no {method}() yet (facade too old for this screen)")
    try:
        return fn(*args, **kwargs)
    except BackendError:
        raise
    except Exception as exc:  # noqa: BLE001 - every facade error becomes a notification, never a crash
        diagnostics = [_as_dict(d) for d in getattr(exc, "diagnostics", []) or []]
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
