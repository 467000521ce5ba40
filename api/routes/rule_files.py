"""Scenario tests and decision tables of the knowledge-base folder (`workbench.rule_files`):

    GET /v1/scenarios                      scenario files
    GET /v1/scenarios/file?file=F          one file's text
    POST /v1/scenarios/run {"file": F}     run it: the document of `workbench kb test F --json`
    GET /v1/decision-tables                decision tables (.csv, .xlsx)
    GET /v1/decision-tables/table?file=F   cells, generated rules, located errors

Paths are relative to the server's knowledge-base folder; one outside it answers 422.
"""

from __future__ import annotations

from fastapi import APIRouter, Query

from workbench import rule_files
from workbench.serving.errors import BadInputError, call

from ..deps import PREDICT_KEY, ServingDep
from ..errors import V1_ERRORS
from ..schemas.rule_files import DecisionTable, FileList, RunScenariosRequest, ScenarioFileText, ScenarioReport
from .tools_common import workbench_of

scenarios = APIRouter(prefix="/v1/scenarios", tags=["knowledge bases"], responses=V1_ERRORS)
tables = APIRouter(prefix="/v1/decision-tables", tags=["knowledge bases"], responses=V1_ERRORS)
FILE = Query(..., min_length=1, max_length=1000, description="Path relative to the knowledge-base folder.")


async def _file_call(param: str, fn, *args, **kwargs):
    """`call(fn, ...)`; a refused path (outside the folder, the wrong kind of file: 422) names the
    request field that holds it (`query.file`, `body.file`), as the API's other 422 answers do."""
    try:
        return await call(fn, *args, **kwargs)
    except BadInputError as exc:
        if exc.param is None:
            exc.param = param
        raise


@scenarios.get("", operation_id="list_scenario_files", summary="Scenario files of the knowledge-base folder.")
async def list_scenario_files(serving: ServingDep) -> FileList:
    wb = workbench_of(serving)
    return FileList(files=await call(rule_files.scenario_files, wb.knowledge_base_dir))


@scenarios.get("/file", operation_id="get_scenario_file", summary="The text of one scenario file.")
async def get_scenario_file(serving: ServingDep, file: str = FILE) -> ScenarioFileText:
    wb = workbench_of(serving)
    text = await _file_call("query.file", rule_files.read_scenario_file, wb.knowledge_base_dir, file)
    return ScenarioFileText(file=file, text=text)


@scenarios.post(
    "/run",
    operation_id="run_scenarios",
    summary="Run a scenario file against its knowledge base (as `workbench kb test --json`).",
    dependencies=[PREDICT_KEY],
)
async def run_scenarios(body: RunScenariosRequest, serving: ServingDep) -> ScenarioReport:
    """200 with `failed` > 0 when scenarios fail; a malformed file or a knowledge base that does
    not load is `error` (with located `diagnostics`) in a 200 answer, as `kb test --json` prints it.
    404 for a missing file, 422 for a path outside the folder."""
    wb = workbench_of(serving)
    doc = await _file_call(
        "body.file",
        rule_files.run_scenario_file,
        wb.knowledge_base_dir,
        body.file,
        allow_unsafe=wb.library.allow_unsafe,
    )
    return ScenarioReport.model_validate(doc)


@tables.get("", operation_id="list_decision_tables", summary="Decision tables (.csv, .xlsx) of the folder.")
async def list_decision_tables(serving: ServingDep) -> FileList:
    wb = workbench_of(serving)
    return FileList(files=await call(rule_files.decision_tables, wb.knowledge_base_dir))


@tables.get("/table", operation_id="get_decision_table", summary="A decision table: cells, generated rules, errors.")
async def get_decision_table(serving: ServingDep, file: str = FILE) -> DecisionTable:
    """Loaded with the `.clp` files of its folder (its templates); errors are located as
    `file.csv:ROW:COL: message` and answered in `diagnostics` (200), not as an HTTP error."""
    wb = workbench_of(serving)
    doc = await _file_call(
        "query.file", rule_files.decision_table, wb.knowledge_base_dir, file, allow_unsafe=wb.library.allow_unsafe
    )
    return DecisionTable.model_validate(doc)
