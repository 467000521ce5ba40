"""Check-only and validate-only calls (nothing is stored), and the node types a pipeline editor offers.

POST /v1/kb/{name}/check             rule text -> located diagnostics, as `workbench kb check`
POST /v1/pipelines/{name}/validate   a pipeline document -> problems per node and field, as `workbench check`
GET  /v1/node-types                  node types with their fields (the editor's forms)
"""

from __future__ import annotations

import yaml
from fastapi import APIRouter

from workbench.pipeline.errors import PipelineValidationError
from workbench.pipeline.spec import COMMON_FIELDS, NODE_FIELDS, NODE_TYPES, REQUIRED_FIELDS, Pipeline
from workbench.serving.errors import BadInputError, call
from workbench.serving.library import source_format

from ..deps import ServingDep
from ..errors import V1_ERRORS
from ..schemas.tools import (
    KnowledgeBaseCheckRequest,
    KnowledgeBaseCheckResponse,
    NodeType,
    NodeTypesResponse,
    PipelineValidateRequest,
    PipelineValidateResponse,
)
from .tools_common import workbench_of

router = APIRouter(tags=["checks"], responses=V1_ERRORS)


@router.post(
    "/v1/kb/{name}/check",
    operation_id="check_knowledge_base",
    summary="Check rule text without saving it: located diagnostics (file:line:col).",
    response_model=KnowledgeBaseCheckResponse,
)
async def check_knowledge_base(
    name: str, body: KnowledgeBaseCheckRequest, serving: ServingDep
) -> KnowledgeBaseCheckResponse:
    """Give `text` (a one-file knowledge base, reported as `NAME.clp`) or `sources` (several files in
    load order). Always 200: `valid` is False when it does not validate; `diagnostics` lists the errors
    and the warnings (`severity`), the same checks and messages as `workbench kb check`."""
    if (body.text is None) == (body.sources is None):
        raise BadInputError("give exactly one of 'text' (one file) or 'sources' (several files)", param="text")
    sources = [(f"{name}.clp", body.text)] if body.text is not None else [(s.file, s.text) for s in body.sources or []]
    if not sources:
        raise BadInputError("'sources' is empty: give at least one file", param="sources")
    tables = [s.file for s in body.sources or [] if (s.format or source_format(s.file)) == "csv"]
    wb = workbench_of(serving)
    found = await call(wb.check_knowledge_base, sources, warnings=True, tables=tables)
    diagnostics = [d.to_dict() if hasattr(d, "to_dict") else {"message": str(d)} for d in found]
    valid = not any(d.get("severity", "error") == "error" for d in diagnostics)
    return KnowledgeBaseCheckResponse(name=name, valid=valid, diagnostics=diagnostics)


@router.post(
    "/v1/pipelines/{name}/validate",
    operation_id="validate_pipeline",
    summary="Validate a pipeline document without storing it: every problem with node and field.",
    response_model=PipelineValidateResponse,
)
async def validate_pipeline(name: str, body: PipelineValidateRequest, serving: ServingDep) -> PipelineValidateResponse:
    """Checks the structure and every reference (knowledge bases, models, expressions), as
    `workbench check` does. Always 200 for a readable document; `valid` says whether it passed."""
    wb = workbench_of(serving)
    try:
        if isinstance(body.document, str):
            pipeline = await call(Pipeline.from_yaml, body.document)
        else:
            pipeline = await call(Pipeline.from_data, body.document)
        issues = await call(wb.validate, pipeline)
    except BadInputError:
        raise
    except Exception as exc:  # noqa: BLE001 - PipelineValidationError is an answer here, not a failure
        cause = exc.__cause__ if isinstance(exc.__cause__, PipelineValidationError) else exc
        if not isinstance(cause, PipelineValidationError):
            raise
        issues = cause.issues
    if isinstance(body.document, dict):
        doc_name = body.document.get("name")
    else:
        try:
            doc_name = (yaml.safe_load(body.document) or {}).get("name")
        except (yaml.YAMLError, AttributeError):
            doc_name = None
    problems = [i.to_dict() for i in issues]
    if doc_name is not None and doc_name != name:
        problems.append(
            {"node": None, "field": "name", "message": f"the document's name is {doc_name!r}, not {name!r}"}
        )
    return PipelineValidateResponse(name=name, valid=not problems, issues=problems)


@router.get(
    "/v1/node-types",
    operation_id="list_node_types",
    summary="Pipeline node types with their fields and required fields.",
    response_model=NodeTypesResponse,
)
async def node_types() -> NodeTypesResponse:
    return NodeTypesResponse(
        common=list(COMMON_FIELDS),
        types=[
            NodeType(type=t, fields=list(NODE_FIELDS.get(t, ())), required=list(REQUIRED_FIELDS.get(t, ())))
            for t in NODE_TYPES
        ],
    )
