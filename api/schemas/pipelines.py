"""Bodies of `/v1/pipelines`, `/v1/runs` and `/v1/kb` (unknown fields are refused: 422 names them)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


class _Strict(BaseModel):
    # NaN, Infinity and 1e400 (parsed as inf) are refused as numbers: "must be a finite number"
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class PipelineDocument(_Strict):
    """`PUT /v1/pipelines/{name}` as JSON (a YAML body with `Content-Type: application/yaml` works too)."""

    document: str = Field(description="The pipeline YAML (docs/pipelines.md); its `name` must match the URL.")
    stage: Literal["production", "staging"] | None = Field(
        None, description="Also point this stage at the new version."
    )


class PredictRequest(_Strict):
    """`POST /v1/pipelines/{name}/predict`: exactly one of `input` (one run) or `inputs` (a batch)."""

    input: dict[str, Any] | None = Field(None, description="One input, matching the pipeline's input schema.")
    inputs: Annotated[list[dict[str, Any]], Field(min_length=1, max_length=1024)] | None = Field(
        None, description="Several inputs run concurrently (their model calls batch together)."
    )
    version: str | None = Field(
        None, description="A stored version (a unique prefix is enough); default: production, else latest."
    )
    explain: bool = Field(
        False, strict=True, description="Add the explanation (rule firings, model calls, gate decisions)."
    )
    timeout_s: float | None = Field(
        None,
        gt=0,
        le=3600,
        strict=True,  # `true` is not 1 second
        description="Deadline in seconds (default: the server's serving.predict_timeout_s); past it the run is "
        "cancelled and the answer is 504 (steps already running finish, and a run whose last steps had "
        "started may still be recorded: docs/serving.md).",
    )
    stream: bool = Field(
        False,
        strict=True,  # JSON true or false, not "yes" or 1
        description="Answer server-sent events as the run goes (node finished, text delta, rail verdict, "
        "result); one `input` only.",
    )

    @model_validator(mode="after")
    def _one_of(self) -> PredictRequest:
        if (self.input is None) == (self.inputs is None):
            raise ValueError("give exactly one of 'input' (one run) or 'inputs' (a batch)")
        if self.stream and self.inputs is not None:
            raise ValueError("stream: true takes one 'input', not a batch of 'inputs'")
        return self


class PromoteRequest(_Strict):
    version: str = Field(
        min_length=1, description="A stored version (a unique prefix is enough; not empty: that would match every one)."
    )


class KnowledgeBaseText(_Strict):
    """`PUT /v1/kb/{name}` as JSON (a `text/plain` body with the rules works too)."""

    text: str = Field(description="CLIPS rule text (deftemplate, deffacts, defrule, ...).")


class FactIn(_Strict):
    """A fact as data: a template with slots, or an ordered relation with values."""

    template: str
    slots: dict[str, Any] | None = None
    values: list[Any] | None = None


# Bounds of the numeric request fields: every number a client sends has a ceiling, so no request can
# ask for unbounded work or memory (a process-wide limit once followed `max_depth`: issue 16).
MAX_FACTS = 10_000
MAX_FIRINGS = 100_000_000
MAX_ANSWERS = 10_000
MAX_PROOF_DEPTH = 1_000


class RunKnowledgeBaseRequest(_Strict):
    facts: Annotated[list[FactIn], Field(max_length=MAX_FACTS)] = Field(default_factory=list)
    strategy: Literal["depth", "breadth", "simplicity", "complexity", "lex", "mea", "random"] | None = None
    max_firings: Annotated[int, Field(le=MAX_FIRINGS)] | None = Field(
        None,
        description="Fire at most this many rules, as CLIPS's `(run N)`: 422 `limit_exceeded` when more would fire; "
        "0 fires none; negative: no firing limit, as `(run -1)` (the time limit still applies). Default: the "
        "server's limit, 100,000.",
    )
    timeout_s: Annotated[float, Field(gt=0, le=300, strict=True)] | None = Field(
        None, description="Time limit in seconds (504 `timeout` when it passes)."
    )


class AskRequest(_Strict):
    goal: str = Field(max_length=10_000, description="A fact pattern in CLIPS syntax, e.g. `(ancestor ?x otto)`.")
    facts: Annotated[list[FactIn], Field(max_length=MAX_FACTS)] = Field(default_factory=list)
    all: bool = Field(False, strict=True, description="All answers instead of the first.")
    max_answers: Annotated[int, Field(ge=1, le=MAX_ANSWERS)] | None = None
    max_depth: Annotated[int, Field(ge=1, le=MAX_PROOF_DEPTH)] | None = Field(
        None, description=f"Most nested subgoals (default 200, at most {MAX_PROOF_DEPTH})."
    )
    timeout_s: Annotated[float, Field(gt=0, le=300, strict=True)] | None = Field(
        None, description="Time limit of the proof in seconds (default 30; 504 `timeout` when it passes)."
    )


def facts_as_dicts(facts: list[FactIn]) -> list[dict[str, Any]]:
    return [f.model_dump(exclude_none=True) for f in facts]
