"""`RunResult`: what a run returns to callers (and what the store recorded)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


class Explanation(dict):
    """A run's explanation (workbench/pipeline/explanation.py): a plain JSON-ready `dict` (it
    serialises exactly as one: json, the API, the store) that also displays itself, as `RunResult`
    does: `_repr_html_` for Jupyter (summary, gates, model calls, proofs, the full tree) and
    `__rich__` for `rich.print` (the explanation tree)."""

    __slots__ = ()

    def _repr_html_(self) -> str:
        from .display import explanation_html

        return explanation_html(self)

    def __rich__(self) -> Any:
        from .render import explanation_tree

        return explanation_tree(self)


@dataclass(slots=True)
class RunResult:
    """One pipeline run.

    Attributes:
        run_id: id of the recorded run (None when `record=False`).
        pipeline, version: the pipeline's name and content hash.
        status: "succeeded" or "failed".
        outputs: the output node's value (None when the run failed).
        error: the failure, naming the node (None on success); `failed_node` its id.
        explanation: filled when asked for (`explain=True`) or when the pipeline has an explain node;
            an `Explanation` (a dict that displays itself in Jupyter and rich).
        timings: seconds per node that ran, plus "total".
        skipped: ids of nodes not run (gate branches not taken, or after a failure).
        cache_hit: the outputs came from the result cache (no model was called); `cached_from`
            is then the run whose result was reused.
        knowledge_base_versions / model_versions: {name: content hash} of what was used.
        served_by: on a Ray cluster, the node and replica that ran it (`node ID replica ID`); None
            in one process.
        trace: the run's trace events (`workbench.store.TraceEvent`: rule firings, gate decisions, model
            calls...) when it was not recorded (`record=False`, or no store); a recorded run's are in the
            store (`Workbench.get_trace`). Not shown, not compared.
    """

    run_id: str | None
    pipeline: str
    version: str
    status: str
    inputs: dict[str, Any]
    outputs: dict[str, Any] | None = None
    error: str | None = None
    failed_node: str | None = None
    explanation: dict[str, Any] | None = None
    timings: dict[str, float] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)
    cache_hit: bool = False
    cached_from: str | None = None
    knowledge_base_versions: dict[str, str] = field(default_factory=dict)
    model_versions: dict[str, str] = field(default_factory=dict)
    started_at: datetime | None = None
    duration_s: float = 0.0
    replay_of: str | None = None
    served_by: str | None = None
    trace: list[Any] | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        if type(self.explanation) is dict:  # noqa: E721 (a plain dict from the executor, the store or the cache)
            self.explanation = Explanation(self.explanation)

    @property
    def ok(self) -> bool:
        return self.status == "succeeded"

    def _repr_html_(self) -> str:
        """Jupyter: outputs, the explanation's summary and the versions as HTML."""
        from .display import run_result_html

        return run_result_html(self)

    def __rich__(self) -> Any:
        """`rich.print(result)`: outputs, the explanation tree and the versions."""
        from .display import run_result_rich

        return run_result_rich(self)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (the CLI's `--json` lines and the API's predict response)."""
        return {
            "run_id": self.run_id,
            "pipeline": self.pipeline,
            "version": self.version,
            "status": self.status,
            "inputs": self.inputs,
            "outputs": self.outputs,
            "error": self.error,
            "failed_node": self.failed_node,
            "explanation": self.explanation,
            "timings": self.timings,
            "skipped": self.skipped,
            "cache_hit": self.cache_hit,
            "cached_from": self.cached_from,
            "knowledge_base_versions": self.knowledge_base_versions,
            "model_versions": self.model_versions,
            "started_at": self.started_at.isoformat() if self.started_at else None,
            "duration_s": self.duration_s,
            "replay_of": self.replay_of,
            "served_by": self.served_by,
        }

    @classmethod
    def from_row(cls, row: Any) -> RunResult:
        """Rebuild from a stored `RunRow` (explanation included when it was recorded)."""
        return cls(
            run_id=row.id,
            pipeline=row.pipeline_name,
            version=row.pipeline_version,
            status=row.status,
            inputs=row.inputs,
            outputs=row.outputs,
            error=row.error,
            failed_node=row.failed_node,
            explanation=row.explanation,
            timings=dict(row.timings or {}),
            skipped=list(row.skipped or []),
            cache_hit=bool(row.cache_hit),
            cached_from=row.cached_from,
            knowledge_base_versions=dict(row.knowledge_base_versions or {}),
            model_versions=dict(row.model_versions or {}),
            started_at=row.started_at,
            duration_s=row.duration or 0.0,
            replay_of=row.replay_of,
            served_by=row.served_by,
        )
