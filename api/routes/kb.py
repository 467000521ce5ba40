"""Knowledge bases: list, get, upload (validated), forward chaining (`run`), backward chaining (`ask`)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from ..deps import PREDICT_KEY, WRITE_KEY, ServingDep
from ..documents import document_body_doc, read_document
from ..errors import V1_ERRORS
from ..schemas.pipelines import AskRequest, KnowledgeBaseText, RunKnowledgeBaseRequest, facts_as_dicts

router = APIRouter(prefix="/v1/kb", tags=["knowledge bases"], responses=V1_ERRORS)


@router.get("", operation_id="list_knowledge_bases", summary="Knowledge bases with their templates and rules.")
async def list_knowledge_bases(serving: ServingDep) -> dict[str, Any]:
    """Files that do not validate are listed with `errors` (file:line:col messages)."""
    return {"knowledge_bases": await serving.list_knowledge_bases()}


@router.get("/{name}", operation_id="get_knowledge_base", summary="One knowledge base: summary, version and rule text.")
async def get_knowledge_base(name: str, serving: ServingDep) -> dict[str, Any]:
    return await serving.get_knowledge_base(name)


@router.put(
    "/{name}",
    operation_id="put_knowledge_base",
    summary="Upload rule text (validated; errors with line and column).",
    dependencies=[WRITE_KEY],
    status_code=201,
    openapi_extra=document_body_doc(KnowledgeBaseText, ("text/plain",)),
    responses={200: {"description": "Replaced an existing knowledge base."}, 201: {"description": "Created."}},
)
async def put_knowledge_base(name: str, request: Request, serving: ServingDep) -> JSONResponse:
    """Body: `{"text": "<rules>"}` as JSON, or the rules as `text/plain`. Rule files are data:
    they are parsed and validated (functions that reach the operating system are refused) and
    written only when valid; errors answer 422 with `details: [{file, line, column, message}]`."""
    body = await read_document(request, KnowledgeBaseText, "text")
    assert isinstance(body, KnowledgeBaseText)
    result = await serving.upload_knowledge_base(name, body.text)
    return JSONResponse(result, status_code=201 if result.pop("created") else 200)


@router.post(
    "/{name}/run",
    operation_id="run_knowledge_base",
    summary="Forward chaining: facts in, working memory and firings out.",
    dependencies=[PREDICT_KEY],
)
async def run_knowledge_base(name: str, body: RunKnowledgeBaseRequest, serving: ServingDep) -> dict[str, Any]:
    """`{"output", "firings": [{"rule", "facts"}], "facts": [{"id", "template", "slots"}], "asserted", "retracted",
    ...}`."""
    return await serving.run_knowledge_base(
        name, facts_as_dicts(body.facts), strategy=body.strategy, max_firings=body.max_firings, timeout_s=body.timeout_s
    )


@router.post(
    "/{name}/ask",
    operation_id="ask_knowledge_base",
    summary="Backward chaining: a goal in, answers with proofs out.",
    dependencies=[PREDICT_KEY],
)
async def ask(name: str, body: AskRequest, serving: ServingDep) -> dict[str, Any]:
    """`{"proved", "answers": [{"bindings", "certainty", "proof"}], "skipped_rules"}`. Askable
    facts cannot be asked interactively over HTTP: give them in `facts`."""
    return await serving.ask(
        name,
        body.goal,
        facts_as_dicts(body.facts),
        all=body.all,
        max_answers=body.max_answers,
        max_depth=body.max_depth,
    )
