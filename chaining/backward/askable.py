"""Askable facts: questions, providers (a person, a model, a script) and the per-session broker.

A relation is askable when its rule file says so (`;@askable`, see `rules.annotations`). When
a proof needs an askable fact whose identifying slots are bound, the broker asks the provider
once per session (answers are cached) and the answer becomes a fact with source "asked".

Model providers are batched: every question raised while the event loop runs other proofs
(`asyncio.gather` of many goals) is collected, and one `predict_batch(list[Fact])` call answers
them all, in the style of a data loader (collect during one loop turn, then dispatch).
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import asyncio

from rules import KnowledgeBase
from rules.annotations import AskableSpec, ModelBinding
from rules.facts import IMPLIED, Fact, String, Symbol

from .certainty import check_cf, probability_to_certainty
from .errors import AskError
from .terms import Value, fact_text, show, vkey

UNKNOWN = "unknown"


@dataclass(slots=True)
class Question:
    """A question for a provider.

    Attributes:
        relation: the askable relation.
        fact: the fact being asked about: identifying slots only (template), or the whole
            ground fact (ordered relation, a yes/no question).
        ask_slot: the slot whose value is asked, None for a yes/no question.
        text: the question as a sentence.
        allowed: allowed answers (None: any value); "unknown" is always accepted.
        why: the chain of goals that led to it, outermost first (WHY).
    """

    relation: str
    fact: Fact
    ask_slot: str | None
    text: str
    allowed: list[Any] | None
    why: list[str] = field(default_factory=list)
    model: ModelBinding | None = None  # a model-backed relation: the model that answers it

    @property
    def key(self) -> tuple:
        return (self.relation, tuple((k, vkey(v)) for k, v in sorted(self.fact.slots.items())))

    @property
    def fact_text(self) -> str:
        return fact_text(self.fact)

    def to_dict(self) -> dict:
        return {
            "relation": self.relation,
            "fact": self.fact_text,
            "ask_slot": self.ask_slot,
            "text": self.text,
            "allowed": None if self.allowed is None else [str(a) for a in self.allowed],
            "why": list(self.why),
            "model": None if self.model is None else self.model.model,
        }


@dataclass(slots=True)
class AskAnswer:
    """A normalised answer: `value` (the asked slot's value; for yes/no: True/False; None: unknown)."""

    value: Any
    certainty: float | None = None
    source: str = "person"
    text: str = ""


class Provider(Protocol):
    """Answers questions; `source` is "person", "model" or "script"."""

    source: str

    async def answer_batch(self, questions: list[Question]) -> list[Any]: ...


class PersonProvider:
    """A person answers, one question at a time, through `callback(question) -> answer` (sync or async).

    The answer is one of `question.allowed` (or any value when None), "unknown", or for yes/no
    questions yes/no; optionally `{"value": ..., "certainty": cf}`.
    """

    source = "person"

    def __init__(self, callback: Callable[[Question], Any]):
        self.callback = callback

    async def answer_batch(self, questions: list[Question]) -> list[Any]:
        out = []
        for q in questions:
            a = self.callback(q)
            if inspect.isawaitable(a):
                a = await a
            out.append(a)
        return out


class ScriptedProvider:
    """Answers from a mapping `question fact text -> answer`, e.g. `{"(feature (name hair))": "yes"}`.

    Raises AskError for a question the script does not answer (naming the key to add).
    """

    source = "script"

    def __init__(self, answers: Mapping[str, Any]):
        self.answers = {" ".join(k.split()): v for k, v in answers.items()}
        self.asked: list[Question] = []

    @classmethod
    def from_json_file(cls, path: str | Path) -> ScriptedProvider:
        """Read `{"(fact text)": answer, ...}`; raises AskError naming the file on bad JSON."""
        try:
            data = json.loads(Path(path).read_text())
        except (OSError, ValueError) as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
            raise AskError(f"{path}: cannot read answers: {exc}") from None
        if not isinstance(data, dict):
            raise AskError(f"{path}: expected an object mapping question facts to answers, got {type(data).__name__}")
        return cls(data)

    async def answer_batch(self, questions: list[Question]) -> list[Any]:
        out = []
        for q in questions:
            self.asked.append(q)
            key = " ".join(q.fact_text.split())
            if key not in self.answers:
                raise AskError(f'no scripted answer for {key} ({q.text}); add "{key}": ... to the answers file')
            out.append(self.answers[key])
        return out


class ModelProvider:
    """A model answers: `predict_batch(list[Fact]) -> list[answer]`, awaited once per batch.

    Each answer is a value (the asked slot), a `(value, probability)` pair, or for yes/no
    questions a bool or a probability of "yes". Probabilities become certainties 2p - 1
    (`certainty.probability_to_certainty`); a yes/no probability below `threshold` is "no".
    """

    source = "model"

    def __init__(self, predict_batch: Callable[[list[Fact]], Awaitable[list[Any]]], *, threshold: float = 0.5):
        self.predict_batch = predict_batch
        self.threshold = threshold
        self.calls: list[int] = []  # batch sizes, one per call

    async def answer_batch(self, questions: list[Question]) -> list[Any]:
        self.calls.append(len(questions))
        answers = await self.predict_batch([q.fact for q in questions])
        if len(answers) != len(questions):
            raise AskError(f"predict_batch returned {len(answers)} answers for {len(questions)} facts")
        out = []
        for q, a in zip(questions, answers):
            if q.ask_slot is None and isinstance(a, float):
                out.append(
                    {
                        "value": a >= self.threshold,
                        "certainty": probability_to_certainty(a)
                        if a >= self.threshold
                        else probability_to_certainty(1 - a),
                        "p": a,
                    }
                )
            elif isinstance(a, tuple) and len(a) == 2 and isinstance(a[1], float):
                out.append({"value": a[0], "certainty": probability_to_certainty(a[1])})
            else:
                out.append(a)
        return out


def question_for(spec: AskableSpec, fact: Fact, why: list[str]) -> Question:
    """Build the question for an askable fact (identifying slots bound)."""
    if spec.question:
        text = spec.question
        for k, v in fact.slots.items():
            text = text.replace(f"?{k}", show(v))
    elif spec.ask_slot is None:
        text = f"Is it true that {fact_text(fact)}?"
    else:
        text = f"What is the {spec.ask_slot} of {fact_text(fact)}?"
    allowed = list(spec.allowed) if spec.allowed is not None else None
    return Question(spec.relation, fact, spec.ask_slot, text, allowed, why, spec.model)


def normalise(q: Question, raw: Any, source: str) -> AskAnswer:
    """Check a provider's raw answer against the question; raises AskError naming both."""
    cf = None
    note = ""
    if isinstance(raw, dict):
        if "value" not in raw:
            raise AskError(f"answer to {q.fact_text} must have a 'value', got {raw!r}")
        cf = raw.get("certainty")
        if cf is not None:
            cf = check_cf(cf, f"certainty of the answer to {q.fact_text}")
        note = str(raw.get("note") or "")  # e.g. which model version answered, with what probability
        raw = raw["value"]
    a = _normalised(q, raw, source, cf)
    if note:
        a.text = f"{a.text} ({note})"
    return a


def _normalised(q: Question, raw: Any, source: str, cf: float | None) -> AskAnswer:
    text = str(raw)
    if raw is None or (isinstance(raw, str) and raw.strip().lower() == UNKNOWN):
        return AskAnswer(None, cf, source, UNKNOWN)
    if q.ask_slot is None:
        if isinstance(raw, bool):
            return AskAnswer(raw, cf, source, "yes" if raw else "no")
        word = str(raw).strip().lower()
        if word in ("yes", "y", "true"):
            return AskAnswer(True, cf, source, "yes")
        if word in ("no", "n", "false"):
            return AskAnswer(False, cf, source, "no")
        raise AskError(f"answer {raw!r} to '{q.text}' is not one of: yes, no, unknown")
    value: Value
    if isinstance(raw, (int, float)) and not isinstance(raw, bool):
        value = raw
    elif isinstance(raw, str):
        value = Symbol(raw.strip()) if not isinstance(raw, String) else raw
    else:
        raise AskError(f"answer {raw!r} to '{q.text}' must be a symbol, string or number")
    if q.allowed is not None and not any(str(a) == str(value) for a in q.allowed):
        raise AskError(f"answer {raw!r} to '{q.text}' is not one of: {', '.join(map(str, q.allowed))}, unknown")
    if q.allowed is not None:
        match = next(a for a in q.allowed if str(a) == str(value))
        value = match if not isinstance(match, str) or isinstance(match, (Symbol, String)) else Symbol(match)
    return AskAnswer(value, cf, source, text)


class AskBroker:
    """Per-session question cache and batcher in front of the providers.

    `ask` returns the cached answer, joins an identical question in flight, or queues the
    question; queued questions are flushed after the event loop has let every other ready proof
    run (`flush_turns` loop turns, plus `max_wait_s`): one `answer_batch` call per provider, so
    every question pending for the model-backed relations (`;@model`) goes to `models` at once.

    `models` answers the questions of model-backed relations (`workbench.backward_models.
    CatalogModels` loads the annotated catalogue models); without it those questions go to
    `provider` (a person or a script standing in for the model).
    """

    def __init__(
        self,
        kb: KnowledgeBase,
        provider: Provider | None,
        *,
        models: Provider | None = None,
        flush_turns: int = 3,
        max_wait_s: float = 0.0,
    ):
        self.kb = kb
        self.provider = provider
        self.models = models
        self.flush_turns = flush_turns
        self.max_wait_s = max_wait_s
        self.cache: dict[tuple, AskAnswer] = {}
        self.asked: list[tuple[Question, AskAnswer]] = []
        self._pending: list[tuple[Question, asyncio.Future, Provider]] = []
        self._inflight: dict[tuple, asyncio.Future] = {}
        self._flush_task: asyncio.Task | None = None

    def provider_for(self, q: Question) -> Provider | None:
        """Who answers `q`: the models for a model-backed relation (when given), else the provider."""
        if self.models is not None and q.model is not None:
            return self.models
        return self.provider

    def batched(self, spec: AskableSpec) -> bool:
        """True when questions about `spec`'s relation go to a model: collected and asked together."""
        if self.models is not None and spec.model is not None:
            return True
        return self.provider is not None and getattr(self.provider, "source", "") == "model"

    async def ask(self, q: Question) -> AskAnswer:
        """The answer to `q` (cached per session). Raises AskError when no provider is set."""
        import asyncio  # imported when a question is asked: a proof without questions runs without a loop

        key = q.key
        if key in self.cache:
            return self.cache[key]
        if key in self._inflight:
            return await asyncio.shield(self._inflight[key])
        provider = self.provider_for(q)
        if provider is None:
            raise AskError(
                f"{q.fact_text} is askable but no provider (person, model or answers file) was given: {q.text}"
            )
        fut = asyncio.get_running_loop().create_future()
        self._inflight[key] = fut
        self._pending.append((q, fut, provider))
        if self._flush_task is None or self._flush_task.done():
            self._flush_task = asyncio.ensure_future(self._flush_later())
        return await fut

    async def _flush_later(self) -> None:
        import asyncio

        for _ in range(self.flush_turns):
            await asyncio.sleep(0)
        if self.max_wait_s:
            await asyncio.sleep(self.max_wait_s)
        batch, self._pending = self._pending, []
        groups: dict[int, list[tuple[Question, asyncio.Future, Provider]]] = {}
        for item in batch:
            groups.setdefault(id(item[2]), []).append(item)
        await asyncio.gather(*(self._answer(group) for group in groups.values()))
        if self._pending:
            self._flush_task = asyncio.ensure_future(self._flush_later())

    async def _answer(self, batch: list[tuple[Question, asyncio.Future, Provider]]) -> None:
        """One `answer_batch` call of one provider for `batch`; its error goes to every waiting proof."""
        provider = batch[0][2]
        try:
            raws = await provider.answer_batch([q for q, _, _ in batch])
            answers = [normalise(q, raw, provider.source) for (q, _, _), raw in zip(batch, raws)]
        except Exception as exc:
            for q, fut, _ in batch:
                self._inflight.pop(q.key, None)
                if not fut.done():
                    fut.set_exception(exc)
            return
        for (q, fut, _), a in zip(batch, answers):
            self.cache[q.key] = a
            self.asked.append((q, a))
            self._inflight.pop(q.key, None)
            if not fut.done():
                fut.set_result(a)


def answered_fact(q: Question, a: AskAnswer) -> Fact | None:
    """The fact an answer establishes (None for "no" / "unknown")."""
    if a.value is None or a.value is False:
        return None
    if q.ask_slot is None:
        return q.fact
    return Fact(q.relation, {**q.fact.slots, q.ask_slot: a.value})


__all__ = [
    "Question",
    "AskAnswer",
    "Provider",
    "PersonProvider",
    "ScriptedProvider",
    "ModelProvider",
    "AskBroker",
    "question_for",
    "normalise",
    "answered_fact",
    "IMPLIED",
]
