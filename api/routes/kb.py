"""Knowledge bases: list, get, upload (validated), forward chaining (`run`), backward chaining (`ask`)."""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import APIRouter, Query, Request, Response

from workbench.serving.errors import InvalidDocumentError

from .. import paging
from ..deps import PREDICT_KEY, WRITE_KEY, KnowledgeBaseName, ServingDep
from ..disconnect import ClientGone, cancel_on_disconnect, client_gone
from ..documents import document_body_doc, read_document
from ..errors import V1_ERRORS
from ..schemas.pipelines import AskRequest, KnowledgeBaseText, RunKnowledgeBaseRequest, facts_as_dicts
from ..schemas.responses import AskResult, ForwardRun, KnowledgeBaseDetail, KnowledgeBasePage, KnowledgeBaseStored

router = APIRouter(prefix="/v1/kb", tags=["knowledge bases"], responses=V1_ERRORS)


@router.get("", operation_id="list_knowledge_bases", summary="Knowledge bases with their templates and rules.")
async def list_knowledge_bases(
    serving: ServingDep,
    limit: int = Query(100, ge=1, le=paging.MAX_PAGE, description="Knowledge bases per page (by name)."),
    cursor: str | None = Query(None, max_length=512, description="`next_cursor` of the previous page."),
) -> KnowledgeBasePage:
    """Files that do not validate are listed with `errors` (file:line:col messages)."""
    page, next_cursor = paging.after_name(await serving.list_knowledge_bases(), cursor, limit)
    return KnowledgeBasePage.model_validate({"knowledge_bases": page, "next_cursor": next_cursor})


@router.get("/{name}", operation_id="get_knowledge_base", summary="One knowledge base: summary, version and rule text.")
async def get_knowledge_base(name: KnowledgeBaseName, serving: ServingDep) -> KnowledgeBaseDetail:
    """A knowledge base whose files do not validate answers 200 as in the list: `errors`
    (`file:line:col` messages), `files`, and its `.clp` files' text in `sources` (bytes that are not
    UTF-8 shown as U+FFFD), so that a client (the TUI over `--url`) can open the files to fix them."""
    try:
        return KnowledgeBaseDetail.model_validate(await serving.get_knowledge_base(name))
    except InvalidDocumentError:
        doc = await asyncio.to_thread(_unvalidated, serving, name)
        if doc is None:
            raise
        return KnowledgeBaseDetail.model_validate(doc)


def _unvalidated(serving: Any, name: str) -> dict[str, Any] | None:
    """`{"name", "errors", "files", "sources"}` of a knowledge base that does not load; None when it
    loads after all (changed meanwhile: the caller answers the original error) or cannot be found."""
    wb = getattr(serving, "workbench", None)
    if wb is None:
        return None
    library = wb.library
    files: list[Any] = []
    try:
        files = library.paths(name)
        library.load(name)
    except Exception as exc:  # noqa: BLE001 - the load's diagnostics are what this answer reports
        diagnostics = getattr(exc, "diagnostics", None)
        if not diagnostics or not files:
            return None
        errors = [library.relative_text(str(d)) for d in diagnostics]
    else:
        return None
    sources = [
        {"file": library.relative(f), "text": f.read_bytes().decode("utf-8", errors="replace")}
        for f in files
        if f.suffix == ".clp" and f.is_file()
    ]
    return {"name": name, "errors": errors, "files": [library.relative(f) for f in files], "sources": sources}


@router.put(
    "/{name}",
    operation_id="put_knowledge_base",
    summary="Upload rule text (validated; errors with line and column).",
    dependencies=[WRITE_KEY],
    status_code=201,
    openapi_extra=document_body_doc(KnowledgeBaseText, ("text/plain",)),
    responses={
        200: {"model": KnowledgeBaseStored, "description": "Replaced an existing knowledge base."},
        201: {"description": "Created."},
        409: {"description": "NAME is a folder knowledge base (`knowledge_bases/NAME/*.clp`): nothing written."},
    },
)
async def put_knowledge_base(
    name: KnowledgeBaseName, request: Request, response: Response, serving: ServingDep
) -> KnowledgeBaseStored:
    """Body: `{"text": "<rules>"}` as JSON, or the rules as `text/plain`. Rule files are data:
    they are parsed and validated (functions that reach the operating system are refused) and
    written only when valid; errors answer 422 with `details: [{file, line, column, message}]`."""
    body = await read_document(request, KnowledgeBaseText, "text")
    assert isinstance(body, KnowledgeBaseText)
    stored = KnowledgeBaseStored.model_validate(await serving.upload_knowledge_base(name, body.text))
    response.status_code = 201 if stored.created else 200
    return stored


@router.post(
    "/{name}/run",
    operation_id="run_knowledge_base",
    summary="Forward chaining: facts in, working memory and firings out.",
    dependencies=[PREDICT_KEY],
    responses={504: {"description": "The time limit (`timeout_s`) passed with rules still to fire (`timeout`)."}},
)
async def run_knowledge_base(
    name: KnowledgeBaseName, body: RunKnowledgeBaseRequest, serving: ServingDep, request: Request
) -> ForwardRun:
    """Working memory, the firings in order and the printed text. A run that reaches `max_firings`
    answers 422 `limit_exceeded`; one that passes `timeout_s` answers 504 `timeout`. A client that
    disconnects stops the evaluation (it is halted as its time limit would halt it; nothing is sent)."""
    try:
        result = await cancel_on_disconnect(
            request,
            serving.run_knowledge_base(
                name,
                facts_as_dicts(body.facts),
                strategy=body.strategy,
                max_firings=body.max_firings,
                timeout_s=body.timeout_s,
            ),
        )
    except ClientGone:
        return client_gone(json_body=True)
    # sent as JSON text: a slot's (exp 1000) as "Infinity", as every answer writes it (FastAPI writes null)
    return Response(ForwardRun.model_validate(result).model_dump_json(), media_type="application/json")


@router.post(
    "/{name}/ask",
    operation_id="ask_knowledge_base",
    summary="Backward chaining: a goal in, answers with proofs out.",
    dependencies=[PREDICT_KEY],
    responses={504: {"description": "The proof's time limit (`timeout_s`) passed (`timeout`)."}},
)
async def ask(name: KnowledgeBaseName, body: AskRequest, serving: ServingDep, request: Request) -> AskResult:
    """Askable facts cannot be asked interactively over HTTP: give them in `facts`. A proof deeper
    than `max_depth` answers 422 `limit_exceeded`; one that passes `timeout_s` answers 504 `timeout`.
    A client that disconnects stops the proof (between two resolution steps; nothing is sent)."""
    try:
        result = await cancel_on_disconnect(
            request,
            serving.ask(
                name,
                body.goal,
                facts_as_dicts(body.facts),
                all=body.all,
                max_answers=body.max_answers,
                max_depth=body.max_depth,
                timeout_s=body.timeout_s,
            ),
        )
    except ClientGone:
        return client_gone(json_body=True)
    return AskResult.model_validate(result)
