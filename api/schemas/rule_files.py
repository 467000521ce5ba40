"""Bodies and answers of `/v1/scenarios` (scenario tests, as `workbench kb test`) and
`/v1/decision-tables` (decision tables and the rules generated from them)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class FileList(BaseModel):
    files: list[str] = Field(description="POSIX paths relative to the knowledge-base folder, sorted.")


class ScenarioFileText(BaseModel):
    file: str
    text: str


class RunScenariosRequest(_Strict):
    file: str = Field(
        min_length=1,
        max_length=1000,
        description="A scenario file (`*.yaml`) relative to the knowledge-base folder; its `knowledge_base` "
        "files are relative to it and must lie in the folder.",
    )


class LocatedProblem(BaseModel):
    file: str
    line: int
    column: int
    message: str
    severity: str = "error"
    text: str = Field(description="`file:line:col: message` (for a decision table `file.csv:ROW:COL: message`).")


class ScenarioFailure(BaseModel):
    check: str = Field(description="facts, not_facts, fired, output, answers or error.")
    expected: str
    actual: str = Field(description="What was there: the facts of that template, the rules that fired, ...")


class ScenarioOutcome(BaseModel):
    name: str
    passed: bool
    seconds: float
    failures: list[ScenarioFailure]


class ScenarioReport(BaseModel):
    """What `workbench kb test FILE --json` prints, plus `diagnostics` when the knowledge base does not load."""

    file: str
    passed: int
    failed: int
    scenarios: list[ScenarioOutcome]
    error: str | None = Field(None, description="A malformed file (located) or a knowledge base that does not load.")
    diagnostics: list[LocatedProblem] = Field(default_factory=list)


class DecisionTable(BaseModel):
    file: str
    knowledge_base: list[str] = Field(description="The files loaded with the table, in load order.")
    rows: list[list[str]] = Field(description="The cells as text, the header row first.")
    rules: str = Field(description="The CLIPS rules generated from the rows (as `workbench kb show`); '' on errors.")
    diagnostics: list[LocatedProblem] = Field(description="The table's own problems first.")
