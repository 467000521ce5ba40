"""Interactive consultations: a backward-chaining goal proved while a person answers its questions.

A `Consultation` is the resource behind `POST /v1/consultations` and the TUI's Ask screen (both
backends): it runs `Workbench.ask_async` with a person provider whose answers arrive later, from
another thread or request. Its state is one of

    proving    the prover is working (between questions, or before the first)
    asking     a question is open: `question` says what is asked, `why` the goals that led to it
    finished   the search ended: `answers` (with proofs) and `skipped_rules`
    failed     the goal or knowledge base is wrong, or the proof hit a limit: `error`
    cancelled  the person stopped it

Answers are reported as they are proven: with `all_answers` the goal is proved for 1, 2, 3...
answers in turn on one answer cache, so a person is never asked the same question twice and the
first answer shows before the search for the next one starts; without it the search stops at the
first answer (as `workbench kb ask` does). Every consultation runs on one event-loop thread owned
by `Consultations`, so a question waiting for a person holds no thread and no server worker.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from rules.facts import to_json

from .proof_json import how_lines, proof_label, proof_premises  # noqa: F401  (this module's API too)

STATES = ("proving", "asking", "finished", "failed", "cancelled")
TERMINAL = ("finished", "failed", "cancelled")


class ConsultationError(Exception):
    """A request that does not fit the consultation's state (no open question, an answer not among
    the allowed ones, HOW of an answer that does not exist)."""


class TooManyConsultationsError(ConsultationError):
    """Every slot holds a consultation still in progress; finish or delete one first."""


class ConsultationNotFoundError(LookupError):
    """No consultation with this id (never started, or expired)."""

    def __init__(self, consultation_id: str) -> None:
        super().__init__(f"no consultation {consultation_id!r} (finished ones expire after an hour)")
        self.kind, self.name = "consultation", consultation_id


class Cancelled(Exception):
    """Raised inside the prover when the person stops the consultation."""


@dataclass(slots=True)
class AskedQuestion:
    """A question put to the person. `choices` are the allowed answers ([] means free text; "unknown"
    is always accepted); `why` is the chain of goals that led to it, outermost first."""

    number: int
    relation: str
    fact: str
    text: str
    choices: list[str]
    why: list[str]

    def to_dict(self) -> dict[str, Any]:
        return {
            "number": self.number,
            "relation": self.relation,
            "fact": self.fact,
            "text": self.text,
            "choices": list(self.choices),
            "why": list(self.why),
        }


def question_choices(allowed: Iterable[Any] | None, ask_slot: str | None) -> list[str]:
    """The answers a person may give: the allowed values, yes/no for a ground fact, and "unknown"."""
    choices = [str(c) for c in allowed] if allowed else []
    if not choices and ask_slot is None:
        choices = ["yes", "no"]
    if choices and "unknown" not in choices:
        choices.append("unknown")
    return choices


class Consultation:
    """One consultation; see the module docstring. Thread-safe: the prover runs on the registry's
    loop thread, the person's calls come from any thread."""

    def __init__(
        self,
        consultation_id: str,
        knowledge_base: str,
        goal: str,
        facts: list[Any],
        *,
        all_answers: bool,
        max_answers: int,
        loop: asyncio.AbstractEventLoop,
    ) -> None:
        self.id = consultation_id
        self.knowledge_base, self.goal, self.facts = knowledge_base, goal, facts
        self.all_answers, self.max_answers = all_answers, max_answers
        self.state = "proving"
        self.question: AskedQuestion | None = None
        self.answers: list[dict[str, Any]] = []
        self.skipped_rules: list[dict[str, Any]] = []
        self.transcript: list[dict[str, str]] = []
        self.error: str | None = None
        self.exception: BaseException | None = None
        self.touched = time.monotonic()
        self._loop = loop
        self._cond = threading.Condition()
        self._revision = 0
        self._pending: asyncio.Future[str] | None = None
        self._cache: dict[str, str] = {}  # question fact -> answer, kept across the 1, 2, 3... proofs
        self._task: asyncio.Future[None] | None = None
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = []

    # ---- reading ---------------------------------------------------------------------------
    @property
    def revision(self) -> int:
        """Increases on every change (a question, an answer proven, the end)."""
        return self._revision

    def snapshot(self) -> dict[str, Any]:
        """`{"id", "knowledge_base", "goal", "all", "state", "question", "answers", "skipped_rules",
        "transcript", "error", "revision"}` (answers in the order proven, with proofs)."""
        with self._cond:
            return {
                "id": self.id,
                "knowledge_base": self.knowledge_base,
                "goal": self.goal,
                "all": self.all_answers,
                "state": self.state,
                "question": self.question.to_dict() if self.question else None,
                "answers": [dict(a) for a in self.answers],
                "skipped_rules": list(self.skipped_rules),
                "transcript": list(self.transcript),
                "error": self.error,
                "revision": self._revision,
            }

    def wait(self, after_revision: int, timeout_s: float) -> dict[str, Any]:
        """Block until the revision passes `after_revision`, the consultation ends, or `timeout_s` pass;
        returns the snapshot then."""
        deadline = time.monotonic() + max(0.0, timeout_s)
        with self._cond:
            while self._revision <= after_revision and self.state not in TERMINAL:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._cond.wait(left)
        return self.snapshot()

    async def wait_async(self, after_revision: int | None, timeout_s: float) -> dict[str, Any]:
        """`wait` (or `wait_for_person` when `after_revision` is None) for asyncio callers: holds no
        thread while it waits (the API's long polls)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max(0.0, timeout_s)
        while True:
            with self._cond:
                if self.state in TERMINAL:
                    break
                if after_revision is None and self.state != "proving":
                    break
                if after_revision is not None and self._revision > after_revision:
                    break
                event = asyncio.Event()
                self._waiters.append((loop, event))
            left = deadline - loop.time()
            if left <= 0:
                break
            try:
                await asyncio.wait_for(event.wait(), left)
            except TimeoutError:
                break
        return self.snapshot()

    def wait_for_person(self, timeout_s: float) -> dict[str, Any]:
        """Block until the person is needed (a question) or the consultation ended, at most `timeout_s`."""
        deadline = time.monotonic() + max(0.0, timeout_s)
        with self._cond:
            while self.state == "proving":
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._cond.wait(left)
        return self.snapshot()

    def why(self) -> dict[str, Any]:
        """The open question and the chain of goals that led to it. Raises ConsultationError when none is open."""
        with self._cond:
            q = self.question
            if q is None:
                raise ConsultationError(f"consultation {self.id} has no open question ({self.state}); WHY explains one")
            return {"question": q.to_dict(), "why": list(q.why) or [f"{self.goal} (the goal itself needs it)"]}

    def how(self, number: int = 1) -> dict[str, Any]:
        """The proof of answer `number` (1-based): `{"answer", "bindings", "fact", "proof", "lines"}`.
        Raises ConsultationError when there is no such answer yet."""
        with self._cond:
            if not 1 <= number <= len(self.answers):
                have = f"answers 1 to {len(self.answers)}" if self.answers else "no answer yet"
                raise ConsultationError(f"consultation {self.id} has {have}; HOW explains a proven answer")
            a = self.answers[number - 1]
        return {
            "answer": number,
            "bindings": a.get("bindings") or {},
            "fact": a.get("fact"),
            "proof": a.get("proof"),
            "lines": how_lines(a.get("proof")),
        }

    # ---- the person's side -----------------------------------------------------------------
    def answer(self, text: str, question: int | None = None) -> None:
        """Answer the open question (`question`: its number, when given: a repeated or late answer changes
        nothing). Raises ConsultationError when none or another is open, or the answer is not a choice."""
        text = str(text).strip()
        with self._cond:
            q, pending = self.question, self._pending
            if question is not None and (q is None or q.number != question):
                now = f"question {q.number} is open" if q is not None else f"no question is open ({self.state})"
                raise ConsultationError(f"question {question} of consultation {self.id} is not open; {now}")
            if q is None or pending is None:
                raise ConsultationError(f"consultation {self.id} has no open question ({self.state})")
            if q.choices and text not in q.choices:
                raise ConsultationError(f"answer one of: {', '.join(q.choices)} (got {text!r})")
            if not text:
                raise ConsultationError("an answer must not be empty (or answer 'unknown')")
            self._cache[q.fact] = text
            self.transcript.append({"question": q.text, "answer": text})
            self.question, self._pending = None, None
            self.state = "proving"
            self._changed()
        self._loop.call_soon_threadsafe(_resolve, pending, text)

    def cancel(self) -> None:
        """Stop the consultation (an open question is withdrawn). Finished ones are left as they are."""
        with self._cond:
            if self.state in TERMINAL:
                return
            pending, self._pending, self.question = self._pending, None, None
            self.state = "cancelled"
            self._changed()
        if pending is not None:
            self._loop.call_soon_threadsafe(_fail, pending, Cancelled("stopped by the person"))
        if self._task is not None:
            self._task.cancel()

    # ---- the prover's side (on the registry's loop) ----------------------------------------
    source = "person"  # the provider protocol of chaining.backward

    async def answer_batch(self, questions: list[Any]) -> list[Any]:
        """Provider protocol: ask each question (answered from the cache when asked before)."""
        out = []
        for q in questions:
            fact = str(getattr(q, "fact_text", "") or getattr(q, "text", q))
            if fact in self._cache:
                out.append(self._cache[fact])
                continue
            fut: asyncio.Future[str] = asyncio.get_running_loop().create_future()
            with self._cond:
                if self.state == "cancelled":
                    raise Cancelled("stopped by the person")
                self.question = AskedQuestion(
                    number=len(self.transcript) + 1,
                    relation=str(getattr(q, "relation", "")),
                    fact=fact,
                    text=str(getattr(q, "text", "") or fact),
                    choices=question_choices(getattr(q, "allowed", None), getattr(q, "ask_slot", None)),
                    why=[str(w) for w in getattr(q, "why", None) or []],
                )
                self._pending, self.state = fut, "asking"
                self._changed()
            out.append(await fut)
        return out

    async def run(self, workbench: Any) -> None:
        """Prove the goal, reporting answers as they are found (see the module docstring)."""
        from .backward_models import CatalogModels

        models = CatalogModels(workbench.catalog)  # model-backed relations: each fact asked of its model once
        try:
            limit = 1
            while True:
                result = await workbench.ask_async(
                    self.knowledge_base,
                    self.goal,
                    self.facts,
                    all=True,
                    max_answers=limit,
                    provider=self,
                    models=models,
                )
                found = [to_json(a) for a in result.get("answers") or []]
                with self._cond:
                    seen = {_key(a) for a in self.answers}
                    self.answers += [a for a in found if _key(a) not in seen]
                    self.skipped_rules = to_json(result.get("skipped_rules") or [])
                    self._changed()
                if not self.all_answers or len(found) < limit or limit >= self.max_answers:
                    break
                limit += 1
        except (Cancelled, asyncio.CancelledError):
            with self._cond:
                self.state = "cancelled"
                self._changed()
            return
        except Exception as exc:  # the goal, the knowledge base or a limit: said to the person
            with self._cond:
                self.exception, self.error = exc, f"{type(exc).__name__}: {exc}"
                self.state, self.question, self._pending = "failed", None, None
                self._changed()
            return
        with self._cond:
            if self.state != "cancelled":
                self.state = "finished"
            self._changed()

    def _changed(self) -> None:
        """Call with `_cond` held."""
        self._revision += 1
        self.touched = time.monotonic()
        self._cond.notify_all()
        waiters, self._waiters = self._waiters, []
        for loop, event in waiters:
            if not loop.is_closed():
                loop.call_soon_threadsafe(event.set)


def _key(answer: dict[str, Any]) -> str:
    return json.dumps([answer.get("bindings"), answer.get("fact")], sort_keys=True, default=str)


def _resolve(fut: asyncio.Future, value: str) -> None:
    if not fut.done():
        fut.set_result(value)


def _fail(fut: asyncio.Future, exc: BaseException) -> None:
    if not fut.done():
        fut.set_exception(exc)


async def _settle() -> None:
    loop = asyncio.get_running_loop()
    tasks = [t for t in asyncio.all_tasks(loop) if t is not asyncio.current_task()]
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    await loop.shutdown_asyncgens()


class Consultations:
    """The open consultations of one `Workbench`, run on one event-loop thread.

    Args:
        workbench: the facade whose `ask_async` proves goals.
        ttl_s: a consultation untouched this long is cancelled and forgotten.
        max_open: at most this many kept; starting one more forgets the oldest finished ones first.
    """

    def __init__(self, workbench: Any, *, ttl_s: float = 3600.0, max_open: int = 256) -> None:
        self.workbench = workbench
        self.ttl_s, self.max_open = ttl_s, max_open
        self._items: dict[str, Consultation] = {}
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    def _ensure_loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                self._loop = asyncio.new_event_loop()
                self._thread = threading.Thread(target=self._loop.run_forever, name="consultations", daemon=True)
                self._thread.start()
            return self._loop

    def start(
        self,
        knowledge_base: str,
        goal: str,
        facts: list[Any] | None = None,
        *,
        all_answers: bool = False,
        max_answers: int = 50,
        wait_s: float = 30.0,
        wait: bool = True,
    ) -> Consultation:
        """Start proving `goal` over `knowledge_base`; returns once a question is open, the search
        ended, or `wait_s` passed (then the state is still "proving"). A wrong goal or an unknown
        knowledge base comes back as state "failed" with `exception` set. `wait=False` returns at
        once (asyncio callers then `await c.wait_async(None, wait_s)`). Raises
        TooManyConsultationsError when `max_open` are in progress."""
        if max_answers < 1:
            raise ValueError("max_answers must be at least 1")
        self._prune()
        with self._lock:
            if len(self._items) >= self.max_open:
                raise TooManyConsultationsError(
                    f"{len(self._items)} consultations are in progress (at most {self.max_open}); "
                    "finish or DELETE one, or retry later"
                )
        loop = self._ensure_loop()
        c = Consultation(
            uuid.uuid4().hex,
            knowledge_base,
            goal,
            list(facts or []),
            all_answers=all_answers,
            max_answers=max_answers,
            loop=loop,
        )
        with self._lock:
            self._items[c.id] = c
        c._task = asyncio.run_coroutine_threadsafe(c.run(self.workbench), loop)
        if wait:
            c.wait_for_person(wait_s)
        return c

    def get(self, consultation_id: str) -> Consultation:
        """Raises ConsultationNotFoundError."""
        with self._lock:
            c = self._items.get(consultation_id)
        if c is None:
            raise ConsultationNotFoundError(consultation_id)
        c.touched = time.monotonic()
        return c

    def delete(self, consultation_id: str) -> None:
        """Cancel and forget. Raises ConsultationNotFoundError."""
        c = self.get(consultation_id)
        c.cancel()
        with self._lock:
            self._items.pop(consultation_id, None)

    def _prune(self) -> None:
        now = time.monotonic()
        with self._lock:
            items = list(self._items.values())
        stale = [c for c in items if now - c.touched > self.ttl_s]
        finished = sorted((c for c in items if c.state in TERMINAL and c not in stale), key=lambda c: c.touched)
        over = max(0, len(items) - len(stale) - self.max_open + 1)
        for c in stale + finished[:over]:
            c.cancel()
            with self._lock:
                self._items.pop(c.id, None)

    def close(self) -> None:
        """Cancel every consultation and stop the loop thread."""
        with self._lock:
            items, self._items = list(self._items.values()), {}
            loop, thread, self._loop = self._loop, self._thread, None
        for c in items:
            c.cancel()
        if loop is not None:
            try:  # let the prover's async generators finish before the loop goes
                asyncio.run_coroutine_threadsafe(_settle(), loop).result(5)
            except Exception:  # noqa: BLE001 - closing must not fail on a stuck proof
                pass
            loop.call_soon_threadsafe(loop.stop)
            if thread is not None:
                thread.join(5)
            loop.close()


__all__ = [
    "STATES",
    "AskedQuestion",
    "Consultation",
    "ConsultationError",
    "ConsultationNotFoundError",
    "Consultations",
    "TooManyConsultationsError",
    "how_lines",
    "proof_label",
    "question_choices",
]
