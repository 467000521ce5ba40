"""Interactive backward chaining as a resource: the prover asks, the client answers.

    POST   /v1/consultations               start (returns at the first question or the end)
    GET    /v1/consultations/{id}          state, open question, answers so far (`?after=N` waits for news)
    GET    /v1/consultations/{id}/question the open question (409 when none is open)
    POST   /v1/consultations/{id}/answer   answer it (returns at the next question or the end)
    GET    /v1/consultations/{id}/why      the goals that led to the open question
    GET    /v1/consultations/{id}/how      the proof of an answer (`?answer=N`, 1-based)
    GET    /v1/consultations/{id}/result   answers and skipped rules (409 until the search ended)
    DELETE /v1/consultations/{id}          stop and forget

See `workbench.consultation` for the states (proving, asking, finished, failed, cancelled).
"""

from __future__ import annotations

from fastapi import APIRouter, Query, Request, Response

from workbench.consultation import TERMINAL, Consultation, ConsultationNotFoundError
from workbench.serving.errors import ConflictError, NotFoundError, translate

from ..deps import PREDICT_KEY, ServingDep
from ..errors import V1_ERRORS
from ..schemas.pipelines import facts_as_dicts
from ..schemas.tools import AnswerRequest, ConsultationOut, ConsultationRequest, HowOut, QuestionOut, WhyOut
from .tools_common import consultations_of, serving_error

router = APIRouter(prefix="/v1/consultations", tags=["knowledge bases"], responses=V1_ERRORS)


#: added to a 404 when the server runs several worker processes, each with its own consultations
ELSEWHERE = (
    "; this server runs several worker processes (serve --workers N) and a consultation lives in the one "
    "that started it, which this request did not reach: hold consultations on a server with one worker"
)


def _get(request: Request, serving, consultation_id: str) -> Consultation:
    try:
        return consultations_of(request, serving).get(consultation_id)
    except ConsultationNotFoundError as exc:
        error = serving_error(exc)
        if serving.multiprocess:
            error = NotFoundError("consultation", exc.name)._with(str(exc) + ELSEWHERE)
        raise error from exc
    except Exception as exc:  # noqa: BLE001 - mapped by type in serving_error
        raise serving_error(exc) from exc


@router.post(
    "",
    operation_id="start_consultation",
    summary="Start proving a goal; answers at the first question or when the search ends.",
    dependencies=[PREDICT_KEY],
    status_code=201,
    response_model=ConsultationOut,
)
async def start(body: ConsultationRequest, request: Request, serving: ServingDep) -> ConsultationOut:
    """A goal that does not parse or an unknown knowledge base answers 422/404 at once (nothing is kept)."""
    registry = consultations_of(request, serving)
    try:
        c = registry.start(
            body.knowledge_base,
            body.goal,
            facts_as_dicts(body.facts),
            all_answers=body.all,
            max_answers=body.max_answers,
            wait=False,
        )
    except Exception as exc:  # noqa: BLE001 - mapped by type in serving_error
        raise serving_error(exc) from exc
    await c.wait_async(None, body.wait_s)
    if c.state == "failed" and c.exception is not None and not c.transcript:
        registry.delete(c.id)
        raise translate(c.exception) from c.exception
    return ConsultationOut(**c.snapshot())


@router.get("/{consultation_id}", operation_id="get_consultation", response_model=ConsultationOut)
async def get(
    consultation_id: str,
    request: Request,
    serving: ServingDep,
    after: int | None = Query(None, description="Wait (up to wait_s) until the revision is newer than this."),
    wait_s: float = Query(10.0, ge=0, le=60, allow_inf_nan=False),
) -> ConsultationOut:
    """State, the open question and the answers proven so far."""
    c = _get(request, serving, consultation_id)
    if after is None:
        return ConsultationOut(**c.snapshot())
    return ConsultationOut(**await c.wait_async(after, wait_s))


@router.get("/{consultation_id}/question", operation_id="get_consultation_question", response_model=QuestionOut)
async def question(consultation_id: str, request: Request, serving: ServingDep) -> QuestionOut:
    """The open question; 409 when the prover is not waiting for an answer."""
    snap = _get(request, serving, consultation_id).snapshot()
    if snap["question"] is None:
        raise ConflictError(f"consultation {consultation_id} has no open question ({snap['state']})")
    return QuestionOut(**snap["question"])


@router.post(
    "/{consultation_id}/answer",
    operation_id="answer_consultation",
    summary="Answer the open question; answers at the next question or when the search ends.",
    dependencies=[PREDICT_KEY],
    response_model=ConsultationOut,
)
async def answer(consultation_id: str, body: AnswerRequest, request: Request, serving: ServingDep) -> ConsultationOut:
    """409 when no question is open, `question` names one that is not open, or the answer is not one of its choices."""
    c = _get(request, serving, consultation_id)
    try:
        c.answer(body.answer, body.question)
    except Exception as exc:  # noqa: BLE001 - mapped by type in serving_error
        raise serving_error(exc) from exc
    return ConsultationOut(**await c.wait_async(None, body.wait_s))


@router.get("/{consultation_id}/why", operation_id="consultation_why", response_model=WhyOut)
async def why(consultation_id: str, request: Request, serving: ServingDep) -> WhyOut:
    """WHY is the open question asked: the chain of goals, outermost first."""
    try:
        return WhyOut(**_get(request, serving, consultation_id).why())
    except Exception as exc:  # noqa: BLE001
        raise serving_error(exc) from exc


@router.get("/{consultation_id}/how", operation_id="consultation_how", response_model=HowOut)
async def how(consultation_id: str, request: Request, serving: ServingDep, answer: int = Query(1, ge=1)) -> HowOut:
    """HOW answer N was proved: the proof tree and its lines."""
    try:
        return HowOut(**_get(request, serving, consultation_id).how(answer))
    except Exception as exc:  # noqa: BLE001
        raise serving_error(exc) from exc


@router.get("/{consultation_id}/result", operation_id="consultation_result", response_model=ConsultationOut)
async def result(consultation_id: str, request: Request, serving: ServingDep) -> ConsultationOut:
    """The final state; 409 while the search goes on."""
    snap = _get(request, serving, consultation_id).snapshot()
    if snap["state"] not in TERMINAL:
        raise ConflictError(f"consultation {consultation_id} is still {snap['state']}")
    return ConsultationOut(**snap)


@router.delete("/{consultation_id}", operation_id="delete_consultation", status_code=204, response_class=Response)
async def delete(consultation_id: str, request: Request, serving: ServingDep) -> Response:
    """Stop the consultation (an open question is withdrawn) and forget it."""
    try:
        consultations_of(request, serving).delete(consultation_id)
    except Exception as exc:  # noqa: BLE001
        raise serving_error(exc) from exc
    return Response(status_code=204)
