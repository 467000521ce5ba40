"""Errors of pipelines, runs and the `Workbench` facade, one class per thing a caller must tell apart.

The REST API maps them to status codes: `NotFoundError` (and subclasses) -> 404,
`PipelineValidationError` -> 422, `RunFailedError` -> 500 with the failing node named,
`neural.errors.QueueFullError` (passed through unchanged) -> 429/503 with Retry-After.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


class WorkbenchError(Exception):
    """Base class of the errors raised by `workbench.pipeline` and `workbench.Workbench`."""


class NotFoundError(WorkbenchError, LookupError):
    """Something named does not exist. Attributes: `kind` ("pipeline", "run", ...), `name`."""

    def __init__(self, kind: str, name: str, detail: str = ""):
        self.kind = kind
        self.name = name
        super().__init__(f"{kind} {name!r} not found" + (f": {detail}" if detail else ""))


class PipelineNotFoundError(NotFoundError):
    def __init__(self, name: str, detail: str = ""):
        super().__init__("pipeline", name, detail)


class PipelineVersionNotFoundError(PipelineNotFoundError):
    """A stored pipeline has no version `version` (nothing stored at all: `known` is empty)."""

    def __init__(self, name: str, version: str, known: list[str]):
        super().__init__(name)
        self.version = version
        listed = ", ".join(v[:12] for v in known[:10]) + (", ..." if len(known) > 10 else "")
        self.args = (
            f"pipeline {name!r} has no stored version {version!r}; stored versions: {listed}"
            if known
            else f"pipeline {name!r} has no stored versions (save one first)",
        )


class RunNotFoundError(NotFoundError):
    def __init__(self, run_id: str):
        super().__init__("run", run_id)


class AmbiguousRunIdError(NotFoundError):
    """A run-id prefix that more than one run shares. Attributes: `name` (the prefix), `matches` (some of
    the ids that start with it, sorted)."""

    def __init__(self, run_id: str, matches: list[str]):
        self.matches = matches
        super().__init__("run", run_id)
        more = "" if len(matches) < 5 else ", ..."
        self.args = (
            f"run id prefix {run_id!r} is ambiguous: it matches {', '.join(matches)}{more}; give more characters",
        )


class KnowledgeBaseNotFoundError(NotFoundError):
    def __init__(self, name: str, detail: str = ""):
        super().__init__("knowledge base", name, detail)


class ModelNotFoundError(NotFoundError):
    def __init__(self, name: str, known: list[str] | None = None):
        super().__init__("model", name, f"known models: {', '.join(known or []) or '(none)'}")


class ModelUnloadedError(WorkbenchError):
    """A model that was unloaded on request (`ModelCatalog.unload`, `POST /v2/repository/models/NAME/unload`)
    is needed: it stays unloaded until an explicit load (`ModelCatalog.load`, `Workbench.get_model`, `POST
    .../load`), as in Triton's explicit model control, rather than loading again behind the operator's back.
    `pipeline` and `node` name the pipeline node that needs it (None outside a pipeline run). HTTP 503."""

    def __init__(self, name: str, pipeline: str | None = None, node: str | None = None):
        self.name, self.pipeline, self.node = name, pipeline, node
        where = f"pipeline {pipeline!r} needs model {name!r} (node {node!r}), which" if pipeline else f"model {name!r}"
        super().__init__(
            f"{where} was unloaded; load it again first (Workbench.get_model({name!r}), or POST "
            f"/v2/repository/models/{name}/load on a server)"
        )

    def in_node(self, pipeline: str, node: str) -> ModelUnloadedError:
        """The same error naming the pipeline node that needs the model."""
        return ModelUnloadedError(self.name, pipeline, node)


@dataclass(slots=True, frozen=True)
class Issue:
    """One validation problem: the node (None for the pipeline itself), the field path within the
    node or document (e.g. `inputs.pixels`, `edges[2].to`), the message, and the location in the
    YAML file when the pipeline came from one (1-based line/column, 0 when unknown)."""

    node: str | None
    field: str
    message: str
    file: str | None = None
    line: int = 0
    column: int = 0

    def __str__(self) -> str:
        where = (
            f"{self.file or '<pipeline>'}:{self.line}:{self.column}: "
            if self.line
            else (f"{self.file}: " if self.file else "")
        )
        subject = f"node {self.node!r}, field {self.field!r}" if self.node else f"field {self.field!r}"
        return f"{where}{subject}: {self.message}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "node": self.node,
            "field": self.field,
            "message": self.message,
            "file": self.file,
            "line": self.line,
            "column": self.column,
        }


class PipelineValidationError(WorkbenchError, ValueError):
    """A pipeline document is malformed or does not validate; `.issues` lists every problem found."""

    def __init__(self, issues: list[Issue]):
        self.issues = list(issues)
        super().__init__("pipeline is invalid:\n  " + "\n  ".join(str(i) for i in self.issues))


class InputValidationError(WorkbenchError, ValueError):
    """A run input does not match its input node's JSON schema (or holds NaN or an infinity).

    Attributes: `node` (the input node), `field` (JSON path of the offending value in the run input,
    e.g. `$.pixels[3]`), `message`. The text names the field as the client sent it:
    `input.pixels[3]: 99 is greater than the maximum of 16 (input node 'image')`.
    """

    def __init__(self, node: str, field: str, message: str):
        self.node = node
        self.field = field
        self.message = message
        super().__init__(self._text())

    @property
    def input_field(self) -> str | None:
        """The offending field as the run input names it (`input.pixels[3]`, `input` for the whole
        input); None when the value is not one the client sent (`ModelInputError`)."""
        return "input" + self.field[1:] if self.field.startswith("$") else None

    def _text(self) -> str:
        where = self.input_field
        if where is None:
            return f"node {self.node!r}, field {self.field!r}: {self.message}"
        return f"{where}: {self.message} (input node {self.node!r})"


class ModelInputError(InputValidationError):
    """A value a model node computed for one of its model's inputs cannot take the model's dtype or
    shape: bad input all the same (refused, nothing recorded), located at the node's field
    (`field` = `inputs.<model input>`), since no single field of the run input is at fault."""

    @property
    def input_field(self) -> str | None:
        return None


class NodeExecutionError(WorkbenchError):
    """A node failed while running; `node` names it, `__cause__` is the underlying error."""

    def __init__(self, node: str, node_type: str, message: str):
        self.node = node
        self.node_type = node_type
        super().__init__(f"node {node!r} ({node_type}) failed: {message}")


class RunCancelled(WorkbenchError):
    """The run's caller cancelled it (its client left, or its deadline passed) while one of its steps ran:
    the node running then was stopped (a rules evaluation halted, a proof stopped between resolution
    steps) or the next node was not started, and the run ends without a record. `node`: the node that
    was stopped (None: the run stopped between nodes)."""

    def __init__(self, node: str | None, message: str):
        self.node = node
        super().__init__(f"node {node!r}: {message}" if node is not None else message)


class RunFailedError(WorkbenchError):
    """A run failed (`raise_on_error=True`); `result` is the recorded failed `RunResult`."""

    def __init__(self, result: Any):
        self.result = result
        super().__init__(result.error or "run failed")


class KnowledgeBaseError(WorkbenchError, ValueError):
    """An uploaded or edited knowledge base does not validate; `diagnostics` are `file:line:col` items."""

    def __init__(self, name: str, diagnostics: list[Any]):
        self.name = name
        self.diagnostics = list(diagnostics)
        super().__init__(f"knowledge base {name!r} is invalid:\n  " + "\n  ".join(str(d) for d in self.diagnostics))


class KnowledgeBaseConflictError(WorkbenchError):
    """An upload would not replace the knowledge base of that name: `NAME` is a folder of rule files,
    which a single uploaded text cannot stand for (HTTP 409)."""

    def __init__(self, name: str, message: str):
        self.name = name
        super().__init__(message)
