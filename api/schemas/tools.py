"""Bodies and answers of the routes that serve the TUI (and any other client): replay, consultations,
check-only and validate-only calls, model management. Requests refuse unknown fields."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from .pipelines import FactIn


class _Strict(BaseModel):
    # NaN, Infinity and 1e400 (parsed as inf) are refused as numbers: "must be a finite number"
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


# ---- replay ----------------------------------------------------------------------------------
class ReplayRequest(_Strict):
    knowledge_bases: dict[str, str] = Field(
        default_factory=dict,
        description="`{name: rule text}` replacing knowledge bases the run used, for this replay only "
        "(nothing is written to the knowledge-base folder).",
    )


class ChangeRow(BaseModel):
    what: str = Field(description="e.g. `output action`, `gate route`, `rules in policy`, `kb loan_policy`.")
    before: str
    after: str


class ReplayResponse(BaseModel):
    original: dict[str, Any] = Field(description="The recorded run (`GET /v1/runs/{id}` shape).")
    replay: dict[str, Any] = Field(description="The new run, recorded with `replay_of` naming the original.")
    changes: dict[str, Any] = Field(description="What differs: outputs, status, gates, rules, knowledge-base versions.")
    changed: bool = Field(description="True when outputs or status differ.")
    table: list[ChangeRow] = Field(description="The changes as rows for a person (one row when nothing changed).")


class RunKnowledgeBaseSource(BaseModel):
    run_id: str
    name: str
    version: str = Field(description="The knowledge-base version (content hash) the run used.")
    text: str
    recorded: bool = Field(description="False when that version is not stored; `text` is then the current rules.")


# ---- consultations ---------------------------------------------------------------------------
class ConsultationRequest(_Strict):
    knowledge_base: str = Field(description="The knowledge base to prove the goal over.")
    goal: str = Field(description="A fact pattern in CLIPS syntax, e.g. `(animal ?a)`.")
    facts: list[FactIn] = Field(default_factory=list, description="Working-memory facts given up front.")
    all: bool = Field(
        False, strict=True, description="Search for every answer; default: stop at the first, as `kb ask` does."
    )
    max_answers: Annotated[int, Field(ge=1, le=1000)] = 50
    wait_s: Annotated[float, Field(ge=0, le=60)] = Field(
        10.0, description="Wait at most this long for the first question or the end before answering."
    )


class AnswerRequest(_Strict):
    answer: str = Field(description="One of the question's `choices` (any text when there are none), or `unknown`.")
    question: Annotated[int, Field(ge=1)] | None = Field(
        None,
        description="The `number` of the question this answers; when another question is open (a repeated "
        "or late answer), 409 and nothing changes. Without it the answer goes to whatever question is open.",
    )
    wait_s: Annotated[float, Field(ge=0, le=60)] = Field(
        10.0, description="Wait at most this long for the next question or the end before answering."
    )


class QuestionOut(BaseModel):
    number: int = Field(description="1 for the first question of this consultation, and so on.")
    relation: str
    fact: str = Field(description="The fact asked about, e.g. `(feature (name hair))`.")
    text: str
    choices: list[str] = Field(description="Allowed answers; empty means free text. `unknown` is always allowed.")
    why: list[str] = Field(description="The goals that led to the question, outermost first (WHY).")


class ConsultationAnswer(BaseModel):
    bindings: dict[str, Any]
    fact: str | None = None
    certainty: float | None = None
    proof: dict[str, Any] | None = None


class TranscriptEntry(BaseModel):
    question: str
    answer: str


class ConsultationOut(BaseModel):
    id: str
    knowledge_base: str
    goal: str
    all: bool
    state: Literal["proving", "asking", "finished", "failed", "cancelled"]
    question: QuestionOut | None = Field(description="The open question while `state` is `asking`.")
    answers: list[ConsultationAnswer] = Field(description="Answers in the order proven (so far).")
    skipped_rules: list[dict[str, Any]]
    transcript: list[TranscriptEntry]
    error: str | None
    revision: int = Field(description="Increases with every change; `GET ?after=N` waits for a newer one.")


class WhyOut(BaseModel):
    question: QuestionOut
    why: list[str]


class HowOut(BaseModel):
    answer: int
    bindings: dict[str, Any]
    fact: str | None
    proof: dict[str, Any] | None
    lines: list[str] = Field(description="The proof as indented lines, premises under their conclusion.")


# ---- check-only and validate-only ------------------------------------------------------------
class SourceIn(_Strict):
    file: str = Field(description="File name as it should appear in located errors, e.g. `zoo.clp`.")
    text: str
    format: Literal["clips", "csv"] | None = Field(
        None,
        description="How `text` reads: CLIPS rule text, or a decision table's CSV (checked as its generated "
        "rules). Default: csv for a `.csv` or `.xlsx` file name, else clips; GET /v1/kb/NAME gives it per source.",
    )


class KnowledgeBaseCheckRequest(_Strict):
    text: str | None = Field(None, description="Rule text of a one-file knowledge base.")
    sources: list[SourceIn] | None = Field(None, description="Several files in load order (a folder knowledge base).")


class Diagnostic(BaseModel):
    model_config = ConfigDict(extra="allow")

    file: str | None = None
    line: int | None = None
    column: int | None = None
    message: str


class KnowledgeBaseCheckResponse(BaseModel):
    name: str
    valid: bool
    diagnostics: list[Diagnostic] = Field(description="Located problems (`file:line:col: message`, as `kb check`).")


class PipelineValidateRequest(_Strict):
    document: str | dict[str, Any] = Field(description="The pipeline as YAML text or as a JSON object.")


class PipelineIssue(BaseModel):
    model_config = ConfigDict(extra="allow")

    node: str | None = None
    field: str | None = None
    message: str


class PipelineValidateResponse(BaseModel):
    name: str
    valid: bool
    issues: list[PipelineIssue] = Field(description="Problems naming node and field, as `workbench check` reports.")


class NodeType(BaseModel):
    type: str
    fields: list[str] = Field(description="The type's own fields, in document order.")
    required: list[str]


class NodeTypesResponse(BaseModel):
    common: list[str] = Field(description="Fields every node has (`id`, `type`, `description`, `join`...).")
    types: list[NodeType]


# ---- models ----------------------------------------------------------------------------------
class ServedModelStatus(BaseModel):
    name: str
    kind: Literal["tensor", "generation"]
    task: str | None
    state: Literal["READY", "LOADING", "UNAVAILABLE"]
    loaded: bool
    version: str | None = Field(description="Content hash of the weights (short) once loaded.")
    format: str | None
    device: str | None
    reason: str = ""


class ServedModelsResponse(BaseModel):
    server_state: Literal["loading", "ready", "failed"]
    models: list[ServedModelStatus]


class ModelActionResponse(BaseModel):
    name: str
    loaded: bool
    version: str | None = None
