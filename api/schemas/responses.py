"""Response models of `/v1/pipelines`, `/v1/runs`, `/v1/kb` and the health routes.

Every route declares one, so the OpenAPI document is typed and a schema fuzzer (schemathesis, in
the test suite) checks each answer against it. Models allow extra fields: a field the runtime adds
later reaches clients instead of being dropped, and the declared ones stay checked. Deep,
open-ended parts (explanations, proofs, slot values) are JSON objects.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

JsonObject = dict[str, Any]


class _Open(BaseModel):
    # `model_dump_json` (the predict answers) writes a float that is not finite as "NaN", "Infinity" or
    # "-Infinity" (protobuf's JSON mapping, as stored runs, KServe answers and backward JSON), not null
    model_config = ConfigDict(extra="allow", ser_json_inf_nan="strings")


# ---- health ----------------------------------------------------------------------------------
class Liveness(_Open):
    status: Literal["ok"] = "ok"


class Readiness(_Open):
    ready: bool
    state: Literal["loading", "ready", "failed"]
    models: dict[str, bool] = Field(description="Each served model: loaded and ready.")
    error: str | None = Field(None, description="Why start-up loading failed.")


# ---- knowledge bases ---------------------------------------------------------------------------
class KnowledgeBaseSummary(_Open):
    """A knowledge base's names; one that does not validate has only `name` and `errors`."""

    name: str
    version: str | None = Field(None, description="Content hash (sha256 hex) of its rule files.")
    templates: list[str] = Field(default_factory=list)
    rules: list[str] = Field(default_factory=list)
    functions: list[str] = Field(default_factory=list)
    deffacts: list[str] = Field(default_factory=list)
    askable: list[str] = Field(default_factory=list)
    files: list[str] = Field(default_factory=list)
    errors: list[str] | None = Field(None, description="`file:line:col` messages of a file that does not validate.")


class KnowledgeBasePage(_Open):
    knowledge_bases: list[KnowledgeBaseSummary]
    next_cursor: str | None = Field(None, description="Pass as `cursor` for the next page; null on the last.")


class KnowledgeBaseSource(_Open):
    file: str
    text: str = Field(description="The file's own source: rule text, or a decision table's cells as CSV.")
    format: Literal["clips", "csv"] = Field("clips", description="How `text` reads: CLIPS rule text or CSV.")
    rules: str | None = Field(None, description="A decision table's generated CLIPS rules; null for a .clp file.")


class KnowledgeBaseDetail(KnowledgeBaseSummary):
    sources: list[KnowledgeBaseSource] = Field(default_factory=list)


class KnowledgeBaseStored(KnowledgeBaseSummary):
    created: bool = Field(description="True when the name was new (status 201), False when replaced (200).")


class Firing(_Open):
    rule: str
    facts: list[int] = Field(description="Ids of the facts that matched the rule's patterns.")


class FactOut(_Open):
    id: int
    template: str
    slots: JsonObject


class FactEventOut(_Open):
    kind: Literal["assert", "retract"]
    fact: int
    firing: int | None = None


class ForwardRun(_Open):
    """Forward chaining: final working memory, firings in order, printed text."""

    output: str
    firings: list[Firing]
    facts: list[FactOut]
    events: list[FactEventOut] = Field(default_factory=list)
    messages: str = ""
    strategy: str | None = None
    backend: str | None = None


class AskAnswer(_Open):
    bindings: JsonObject
    fact: str | None = None
    certainty: float | None = None
    proof: JsonObject | None = None


class ModelCall(_Open):
    """A predict call of backward chaining: the model, its version (weights' hash) and the batch size."""

    model: str
    version: str
    batch: int


class AskResult(_Open):
    """Backward chaining: whether the goal was proved, each answer with its proof tree."""

    proved: bool
    answers: list[AskAnswer]
    skipped_rules: list[Any] = Field(default_factory=list)
    model_calls: list[ModelCall] = Field(
        default_factory=list,
        description="One per predict call made for model-backed relations (`;@model`): all questions "
        "pending in the query go to a model in one call.",
    )
    warnings: list[str] = Field(
        default_factory=list,
        description="What the proof could not decide: a premise that could not be evaluated, an askable fact "
        "not asked (`not asked, no provider: ...`: over HTTP nobody answers questions, so such a fact is unknown).",
    )


# ---- pipelines ---------------------------------------------------------------------------------
class PipelineSummary(_Open):
    name: str
    versions: int = Field(description="How many versions are stored.")
    stages: dict[str, str] = Field(default_factory=dict, description="Stage (production, staging) -> version.")
    latest: str | None = None
    file: str | None = None
    description: str | None = None


class PipelinePage(_Open):
    pipelines: list[PipelineSummary]
    next_cursor: str | None = Field(None, description="Pass as `cursor` for the next page; null on the last.")


class PipelineVersion(_Open):
    version: str
    created_at: str | None = None
    stages: list[str] = Field(default_factory=list)


class PipelineDetail(_Open):
    name: str
    version: str
    description: str | None = None
    document: str = Field(description="The pipeline YAML.")
    versions: list[PipelineVersion]
    stages: dict[str, str]


class PipelineVersions(_Open):
    name: str
    versions: list[PipelineVersion]
    stages: dict[str, str]


class PipelineStored(_Open):
    name: str
    version: str
    created: bool = Field(description="False when that exact version was already stored (status 200).")


class PipelineDeleted(_Open):
    name: str
    deleted_versions: int


class StagePromoted(_Open):
    name: str
    stage: Literal["production", "staging"]
    version: str


# ---- runs --------------------------------------------------------------------------------------
class RunOut(_Open):
    """One pipeline run with the exact versions that produced it."""

    run_id: str
    pipeline: str
    version: str
    status: Literal["succeeded", "failed"]
    inputs: Any = None
    outputs: Any = None
    error: str | None = None
    failed_node: str | None = None
    explanation: JsonObject | None = None
    timings: dict[str, Any] = Field(default_factory=dict, description="Seconds per node.")
    skipped: list[str] = Field(default_factory=list)
    cache_hit: bool = False
    cached_from: str | None = None
    knowledge_base_versions: dict[str, Any] = Field(default_factory=dict)
    model_versions: dict[str, Any] = Field(default_factory=dict)
    started_at: str | None = None
    duration_s: float | None = None
    replay_of: str | None = None
    served_by: str | None = Field(
        None,
        description="On a Ray cluster: the node and replica that ran it (`node ID replica ID`); null in one process.",
    )


class RunDetail(RunOut):
    trace: list[JsonObject] = Field(default_factory=list, description="Recorded events in order.")


class BatchItemError(_Open):
    code: str
    message: str
    param: str | None = None


class BatchItemFailure(_Open):
    error: BatchItemError


class PredictBatch(_Open):
    results: list[RunOut | BatchItemFailure] = Field(description="One per input, in input order.")


class RunSummary(_Open):
    """A run without its inputs, outputs and explanation (GET /v1/runs/{id} has them)."""

    run_id: str
    pipeline: str
    version: str
    status: Literal["succeeded", "failed"]
    error: str | None = Field(None, description="The first 500 characters of the error.")
    failed_node: str | None = None
    cache_hit: bool = False
    knowledge_base_versions: dict[str, Any] = Field(default_factory=dict)
    model_versions: dict[str, Any] = Field(default_factory=dict)
    started_at: str | None = None
    duration_s: float | None = None
    replay_of: str | None = None
    served_by: str | None = Field(None, description="On a Ray cluster: the node and replica that ran it.")


class RunPage(_Open):
    runs: list[RunSummary] = Field(description="Newest first.")
    next_cursor: str | None = Field(None, description="Pass as `cursor` for the next page; null on the last.")
