"""What the TUI needs from Workbench: one interface (`Backend`), two implementations.

- `tui.inprocess_backend.InProcessBackend` calls the `Workbench` facade in this process; it is what
  `workbench tui` uses by default.
- `tui.http_backend.HttpBackend` talks to a running `workbench serve` through the API's documents
  only (`workbench tui --url URL`); it imports nothing of `workbench`.

Both pass one contract test suite (tests/tui/test_backend_contract.py). Every method is
synchronous and may block (rules, models, the store, the network): screens call them from
Textual workers, never from the UI thread. Results are plain JSON-shaped data, the same shape in
both, documented per method. Every failure is a `BackendError` whose message is fit to show a
person and says what to do; located rule errors travel as `diagnostics`.
"""

from __future__ import annotations

import queue
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable
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


class Backend(ABC):
    """The calls the TUI makes. All return JSON-shaped data; all raise `BackendError` on failure."""

    #: one line naming where the data comes from, shown in the header.
    description: str = ""
    #: True when writes are validated by the other side (a refused write carries the diagnostics).
    validates_on_write: bool = False
    #: True for a server over the network (the app then shows a connection banner).
    remote: bool = False
    #: whose metrics the Models screen shows ("this process" or the server's URL).
    metrics_scope: str = "this process"

    def close(self) -> None:  # noqa: B027 - optional: most backends hold nothing
        """Release what the backend holds (stores, model batchers, connections)."""

    def connection(self) -> JSON:
        """`{"state": "connected" | "reconnecting" | "disconnected", "detail": str}` (always connected in-process)."""
        return {"state": "connected", "detail": ""}

    def ping(self) -> None:  # noqa: B027 - in-process: always answers
        """Check the other side answers; raises BackendError saying what to do otherwise."""

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
    def run_kb_source(self, run_id: str, name: str) -> JSON:
        """The rules of knowledge base `name` as run `run_id` used them: `{"run_id", "name", "version",
        "text", "recorded": bool}` (`recorded` False when that version is not stored and `text` is the
        current one). Raises BackendError when the run did not use `name`."""

    # ---- scenario files and decision tables ----------------------------------------------
    @abstractmethod
    def list_scenario_files(self) -> list[str]:
        """Scenario files (`*.yaml`/`*.yml`, `workbench kb test`'s format) under the knowledge-base
        folder, POSIX paths relative to it, sorted."""

    @abstractmethod
    def read_scenario_file(self, path: str) -> str:
        """Text of one scenario file."""

    @abstractmethod
    def run_scenarios(self, path: str) -> JSON:
        """Run one scenario file as `workbench kb test FILE --json` does: `{"file", "passed",
        "failed", "scenarios": [{"name", "passed", "seconds", "failures": [{"check", "expected",
        "actual"}]}], "error": str | None, "diagnostics": [located problems + "text"]}`. A malformed
        file or a knowledge base that does not load is an `error` in the document, not a raise."""

    @abstractmethod
    def list_decision_tables(self) -> list[str]:
        """Decision tables (`*.csv`, `*.xlsx`) under the knowledge-base folder, relative, sorted."""

    @abstractmethod
    def decision_table(self, path: str) -> JSON:
        """`{"file", "knowledge_base": [files], "rows": [[cell text]], "rules": generated CLIPS text
        ("" when it does not load), "diagnostics": [{"file", "line", "column", "message", "text"}]}`
        (`text` is `file.csv:ROW:COL: message`, the table's own problems first)."""

    # ---- console programs (read / readline on stdin) -----------------------------------------
    #: True when `run_kb_console` can run programs that read the console (in-process only).
    console_runs: bool = True

    @abstractmethod
    def run_kb_console(self, name: str, facts: list[JSON], console: ConsoleChannel) -> JSON:
        """Forward-chain knowledge base `name` as `workbench kb run` does, with `console` as the
        program's terminal: what it prints goes to `console.output` as it is printed, what it reads
        (`read`, `readline`, `read-number`, `get-char` on `stdin`) comes from `console.send()`;
        `console.close()` is the end of input (CLIPS's EOF). Blocks until the program ends; returns
        the `run_kb` document. Raises BackendError where console programs cannot run."""

    # ---- consultations (backward chaining with questions) -----------------------------------
    @abstractmethod
    def start_consultation(self, name: str, goal: str, facts: list[JSON], *, all_answers: bool = False) -> JSON:
        """Start proving `goal` (CLIPS pattern, e.g. "(animal ?x)") over knowledge base `name`.

        Returns at the first question or the end, a consultation document: `{"id", "state":
        "proving"|"asking"|"finished"|"failed"|"cancelled", "question": {"number", "relation",
        "fact", "text", "choices", "why"} | None, "answers": [{"bindings", "fact", "certainty",
        "proof"}], "skipped_rules", "transcript", "error", "revision"}`. Without `all_answers` the
        search stops at the first answer. A goal that does not parse raises BackendError."""

    @abstractmethod
    def consultation(self, consultation_id: str, *, after: int | None = None, wait_s: float = 5.0) -> JSON:
        """The consultation document; with `after`, waits up to `wait_s` for a revision newer than it."""

    @abstractmethod
    def answer_consultation(self, consultation_id: str, answer: str, question: int | None = None) -> JSON:
        """Answer the open question; returns at the next question or the end. An answer that is not
        one of the question's choices raises BackendError (the question stays open); so does one for
        `question` (its number) when another question is open (nothing changes)."""

    @abstractmethod
    def consultation_why(self, consultation_id: str) -> JSON:
        """`{"question", "why": [goal lines, outermost first]}` for the open question."""

    @abstractmethod
    def consultation_how(self, consultation_id: str, answer: int = 1) -> JSON:
        """`{"answer", "bindings", "fact", "proof", "lines": [...]}`: the proof of answer N (1-based)."""

    @abstractmethod
    def stop_consultation(self, consultation_id: str) -> None:
        """Stop and forget a consultation (an open question is withdrawn)."""

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
        """Every problem, structure and references (knowledge bases, models) as `workbench check`
        finds them: `[{"node": id | None, "field": str, "message"}]`; [] when valid."""

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

    @abstractmethod
    def node_types(self) -> JSON:
        """`{"common": [field, ...], "types": [{"type", "fields": [...], "required": [...]}]}`."""

    # ---- models ----------------------------------------------------------------------------
    @abstractmethod
    def list_models(self) -> list[JSON]:
        """`[{"name", "kind": "tensor"|"generation", "version", "format", "task", "device",
        "state": "READY"|"LOADING"|"UNAVAILABLE", "loaded": bool}]`."""

    @abstractmethod
    def set_model_loaded(self, name: str, loaded: bool) -> None:
        """Load or unload a model."""

    @abstractmethod
    def model_stats(self) -> dict[str, JSON]:
        """Cumulative counters per model, sampled now (see `tui.metric_samples.metric_samples`);
        the Models screen turns differences between samples into rates."""

    # ---- runs ------------------------------------------------------------------------------
    @abstractmethod
    def list_runs(
        self, pipeline: str | None = None, status: str | None = None, since_s: float | None = None, limit: int = 200
    ) -> list[JSON]:
        """Recorded runs, newest first, `RunResult.to_dict()` shape (the id is `run_id`);
        `since_s` keeps runs started at most that many seconds ago."""

    @abstractmethod
    def get_run(self, run_id: str) -> JSON:
        """One run (`RunResult.to_dict()` shape) plus `"trace": [{"seq", "kind", "node", "payload"}]`."""

    @abstractmethod
    def replay_run(self, run_id: str, kb_sources: dict[str, str]) -> JSON:
        """Re-run a recorded run with knowledge bases replaced by `{name: rule text}` (the files are
        not changed): `{"original": run, "replay": run, "changes": {...}, "changed": bool,
        "table": [{"what", "before", "after"}]}`. Rule text that does not validate raises
        BackendError with its diagnostics."""


class ConsoleChannel:
    """The terminal of a console program between the TUI and the engine's thread.

    The engine reads it as a binary stream (`read1`/`read`: blocks until a line is sent or the
    channel is closed; b"" then, CLIPS's EOF); `send(text)` queues one answer line (a newline is
    added); `output(text)` is called with the program's text as it is printed (from the engine's
    thread: the TUI hands it to its own thread). Pure Python: the HTTP mode imports it too.
    """

    def __init__(self, output: Callable[[str], None]):
        self.output = output
        self._lines: queue.Queue[bytes | None] = queue.Queue()
        self._closed = threading.Event()
        self.waiting = threading.Event()  # set while the program waits for input

    def send(self, text: str) -> None:
        """Give the program one line of input."""
        if not self._closed.is_set():
            self._lines.put(text.encode("utf-8") + b"\n")

    def close(self) -> None:
        """End of input: the program's next read gets EOF (and every later one)."""
        self._closed.set()
        self._lines.put(None)

    @property
    def closed(self) -> bool:
        return self._closed.is_set()

    def read1(self, n: int = -1) -> bytes:
        self.waiting.set()
        try:
            line = self._lines.get()
        finally:
            self.waiting.clear()
        if line is None:
            self._lines.put(None)  # every later read is EOF too
            return b""
        return line

    read = read1

    # a text stream for the program's output (what `chaining.forward.Console` writes to)
    def write(self, text: str) -> int:
        if text:
            self.output(text)
        return len(text)

    def flush(self) -> None:
        pass


def located_in(path: str, diagnostics: list[JSON]) -> list[JSON]:
    """Diagnostics of a knowledge base checked from several files, as seen from `path`: a problem in
    another file of the same knowledge base is shown at 1:1 with its own location in the message."""
    out = []
    for d in diagnostics:
        if d.get("file") not in (path, path.rsplit("/", 1)[-1]):
            d = {
                **d,
                "line": 1,
                "column": 1,
                "message": f"(in {d.get('file')}:{d.get('line')}:{d.get('column')}) {d.get('message')}",
            }
        out.append({**d, "file": path})
    return out
