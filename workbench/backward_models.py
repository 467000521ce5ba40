"""Model-backed relations of backward chaining: the catalogue models that `;@model` annotations name
(`rules.annotations.ModelBinding`) answer the prover's questions, every question pending in one
query in one predict call per model.

    from workbench.backward_models import CatalogModels
    session = Session(kb, models=CatalogModels(wb.catalog))   # kb ask, the API, goal nodes, the TUI

A question's fact gives the model's inputs through the annotation's mapping (`input.NAME=SLOT`; an
ordered relation's field number). Each model's output for the item is read as class scores: the
answer is the label of the best class (a template's asked slot) or "yes" when the `yes` class's
probability reaches the threshold (an ordered relation). Probabilities become certainties 2p - 1
(`chaining.backward.probability_to_certainty`).
"""

from __future__ import annotations

import difflib
from typing import Any

import numpy as np

from chaining.backward import AskError, Question, probability_to_certainty
from rules import KnowledgeBase
from rules.annotations import ModelBinding
from rules.errors import Diagnostic
from rules.facts import IMPLIED

from .pipeline.errors import ModelNotFoundError, ModelUnloadedError


def bindings(kb: KnowledgeBase) -> dict[str, ModelBinding]:
    """Relation -> its `;@model` binding, for every model-backed relation of `kb`."""
    return {rel: spec.model for rel, spec in kb.askable_specs.items() if spec.model is not None}


class CatalogModels:
    """Answers the questions of model-backed relations with the catalogue's models (a `Provider`).

    Args:
        catalog: `workbench.pipeline.catalog.ModelCatalog` (a Workbench's `catalog`): models load
            through it on first use, as pipelines load them.
        timeout_s: deadline of one predict call in seconds (None: the batcher's default).

    `calls` lists one `{"model", "version" (the weights' content hash), "batch"}` per predict call (a
    call's items are admitted to the model's dynamic batcher together: one batch up to its max batch size).
    Answers are kept by question, so one `CatalogModels` used for several proofs (a consultation
    proving for 1, 2, 3... answers) asks the model about each fact once.
    """

    source = "model"

    def __init__(self, catalog: Any, *, timeout_s: float | None = None):
        self.catalog = catalog
        self.timeout_s = timeout_s
        self.calls: list[dict[str, Any]] = []
        self._answers: dict[tuple, Any] = {}

    def entry(self, binding: ModelBinding) -> Any:
        """The loaded model of `binding`. Raises AskError naming the annotation and the known models."""
        try:
            return self.catalog.get(binding.model)
        except ModelUnloadedError as exc:
            raise AskError(f"{binding.where}: {exc}") from None
        except ModelNotFoundError:
            raise AskError(f"{binding.where}: {unknown_model_message(binding.model, self.catalog.names())}") from None

    async def answer_batch(self, questions: list[Question]) -> list[Any]:
        """One predict call per model for `questions` (all of one flush); answers in their order.

        Returns per question `{"value", "certainty", "note"}` (value None: below the threshold,
        unknown). Raises AskError (unknown model, a slot value that does not fit the input, an
        output that is not class scores), naming the annotation's file:line:col.
        """
        by_model: dict[str, list[int]] = {}
        out: list[Any] = [None] * len(questions)
        for i, q in enumerate(questions):
            if q.model is None:
                raise AskError(f"{q.fact_text}: relation {q.relation} is not model-backed (;@model)")
            if q.key in self._answers:
                out[i] = self._answers[q.key]
                continue
            by_model.setdefault(q.model.model, []).append(i)
        for name, idx in by_model.items():
            entry = self.entry(questions[idx[0]].model)  # type: ignore[arg-type]
            items = [model_input(entry, questions[i]) for i in idx]
            try:
                results = await entry.infer_many(items, timeout_s=self.timeout_s)
            except Exception as exc:  # the model's own error, told where the relation is declared
                binding = questions[idx[0]].model
                raise AskError(f"{binding.where}: model {name!r} failed: {type(exc).__name__}: {exc}") from exc  # type: ignore[union-attr]
            self.calls.append({"model": name, "version": entry.version, "batch": len(items)})
            for i, res in zip(idx, results):
                out[i] = self._answers[questions[i].key] = answer_from_output(entry, questions[i], res)
        return out


def model_input(entry: Any, q: Question) -> Any:
    """The model request for question `q`: `{input name: array of the input's item shape}` for a
    tensor model, the text for a text model. Raises AskError naming the slot and the expected shape."""
    b: ModelBinding = q.model  # type: ignore[assignment]
    sig = entry.signature
    names = sig.input_names if sig is not None else [""]
    item: dict[str, Any] = {}
    for name, source in b.inputs.items():
        if name == "" and len(names) != 1:
            raise AskError(
                f"{b.where}: model {entry.name!r} has inputs {', '.join(names)}: map each with input.NAME=SLOT"
            )
        target = name or names[0]
        if sig is not None and target not in names:
            raise AskError(f"{b.where}: model {entry.name!r} has no input {target!r} (inputs: {', '.join(names)})")
        item[target] = _slot_value(q, source, b)
    if sig is None:  # a text model: one string
        return str(next(iter(item.values())))
    missing = [n for n in names if n not in item]
    if missing:
        raise AskError(
            f"{b.where}: model {entry.name!r} input(s) {', '.join(missing)} are not mapped (input.NAME=SLOT)"
        )
    out = {}
    for name, value in item.items():
        spec = sig.input(name)
        values = value if isinstance(value, tuple) else (value,)
        try:
            arr = np.asarray(values, dtype=spec.dtype)
        except (ValueError, TypeError, OverflowError):  # a symbol or string where the model takes numbers
            bad = next((v for v in values if not _converts(v, spec.dtype)), values[0] if values else value)
            raise AskError(
                f"{b.where}: {q.fact_text}: slot {source} value {bad!s} is not a number; model {entry.name!r} "
                f"input {name!r} is {spec.dtype}"
            ) from None
        shape = [d if d > 0 else -1 for d in spec.shape[1:]]
        free = [i for i, d in enumerate(shape) if d < 0]
        for i in free[:-1]:  # several free axes (e.g. [digits, 64] of a per-item sequence): one row each
            shape[i] = 1
        try:
            out[name] = arr.reshape(shape) if shape else arr.reshape(())
        except ValueError:
            raise AskError(
                f"{b.where}: {q.fact_text}: slot {source} has {arr.size} value(s); model {entry.name!r} input "
                f"{name!r} takes shape {list(spec.shape)} (batch axis first)"
            ) from None
    return out


def _converts(value: Any, dtype: str) -> bool:
    try:
        np.asarray([value], dtype=dtype)
    except (ValueError, TypeError, OverflowError):
        return False
    return True


def _slot_value(q: Question, source: str, b: ModelBinding) -> Any:
    if q.ask_slot is None and q.fact.is_ordered:  # an ordered relation: a field number
        values = q.fact.slots.get(IMPLIED, ())
        k = int(source)
        if k > len(values):
            raise AskError(f"{b.where}: {q.fact_text} has {len(values)} field(s); input={source} reads field {k}")
        return values[k - 1]
    if source not in q.fact.slots:
        raise AskError(f"{b.where}: {q.fact_text} has no value for slot {source}")
    return q.fact.slots[source]


def answer_from_output(entry: Any, q: Question, res: Any) -> dict[str, Any]:
    """Read one item's output as class probabilities and answer `q` (see the module docstring)."""
    b: ModelBinding = q.model  # type: ignore[assignment]
    outputs = res if isinstance(res, dict) else {"": res}
    name = b.output or next(iter(outputs))
    if name not in outputs:
        raise AskError(f"{b.where}: model {entry.name!r} has no output {name!r} (outputs: {', '.join(outputs)})")
    scores = np.asarray(outputs[name], dtype=np.float64).reshape(-1)
    if scores.size == 0:
        raise AskError(f"{b.where}: model {entry.name!r} output {name!r} is empty")
    probs = _probabilities(scores, b.scores)
    labels = b.labels
    if labels is not None and len(labels) != probs.size:
        raise AskError(
            f"{b.where}: labels= names {len(labels)} classes; model {entry.name!r} output {name!r} has {probs.size}"
        )
    version = entry.short_version
    if q.ask_slot is None:  # yes/no: the probability of the yes class
        k = probs.size - 1 if b.yes is None else ([str(x) for x in labels].index(b.yes) if labels else int(b.yes))  # type: ignore[union-attr]
        p = float(probs[k]) if probs.size > 1 else float(probs[0])
        yes = p >= b.threshold
        return {
            "value": yes,
            "certainty": probability_to_certainty(p if yes else 1.0 - p),
            "note": f"model {entry.name}@{version}, p(yes) = {p:.4g}",
        }
    k = int(np.argmax(probs))
    p = float(probs[k])
    label = labels[k] if labels else k
    note = f"model {entry.name}@{version}, p({label}) = {p:.4g}"
    if p < b.threshold:
        return {"value": None, "note": note + f" < threshold {b.threshold:g}"}
    return {"value": label, "certainty": probability_to_certainty(p), "note": note}


def _probabilities(scores: np.ndarray, mode: str) -> np.ndarray:
    """Scores as probabilities: a softmax (several classes) or a sigmoid (one) of logits."""
    is_dist = bool(np.all(scores >= 0) and np.all(scores <= 1)) and (
        scores.size == 1 or abs(float(scores.sum()) - 1.0) < 1e-3
    )
    if mode == "probabilities" or (mode == "auto" and is_dist):
        return scores
    if scores.size == 1:
        return 1.0 / (1.0 + np.exp(-scores))
    e = np.exp(scores - scores.max())
    return e / e.sum()


def unknown_model_message(name: str, known: list[str]) -> str:
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    hint = f"; did you mean {close[0]}?" if close else ""
    return f"no model named {name!r} in the catalogue (models: {', '.join(known) or 'none'}){hint}"


def check_bindings(kb: KnowledgeBase, catalog: Any, *, load: bool = True) -> list[Diagnostic]:
    """Located errors for the `;@model` annotations of `kb`: an unknown model (with "did you mean"),
    and, when `load` (the model is loaded to read its signature), an input or output the model
    lacks, an input left unmapped, or `labels=` naming more or fewer classes than the output has (when
    its shape is static). Never raises for a model that is missing or does not load."""
    out: list[Diagnostic] = []
    seen: set[tuple] = set()
    known = catalog.names()
    for b in bindings(kb).values():
        key = (b.file, b.line, b.column)
        if key in seen:
            continue
        seen.add(key)

        def err(msg: str, b: ModelBinding = b) -> None:
            out.append(Diagnostic(b.file, b.line, b.column, msg))

        if not catalog.known(b.model):
            err(unknown_model_message(b.model, known))
            continue
        if not load or catalog.unloaded(b.model):  # checking never loads an unloaded model again
            continue
        try:
            entry = catalog.get(b.model)
        except Exception as exc:
            err(f"model {b.model!r} does not load: {type(exc).__name__}: {exc}")
            continue
        sig = entry.signature
        if sig is None:
            if len(b.inputs) != 1:
                err(f"model {b.model!r} takes one input (the text); map it with input=SLOT")
            continue
        names = sig.input_names
        n_bad = len(out)
        for name in b.inputs:
            if name == "" and len(names) != 1:
                err(f"model {b.model!r} has inputs {', '.join(names)}: map each with input.NAME=SLOT")
            elif name and name not in names:
                err(f"model {b.model!r} has no input {name!r} (inputs: {', '.join(names)})")
        mapped = {n or names[0] for n in b.inputs}
        missing = [n for n in names if n not in mapped]
        if missing and len(out) == n_bad:  # an unknown input name already says what is wrong
            err(f"model {b.model!r} input(s) {', '.join(missing)} not mapped (input.NAME=SLOT)")
        if b.output is not None and b.output not in sig.output_names:
            err(f"model {b.model!r} has no output {b.output!r} (outputs: {', '.join(sig.output_names)})")
        elif b.labels is not None and sig.outputs:  # as `answer_from_output` refuses it at ask time
            spec = next((o for o in sig.outputs if o.name == b.output), sig.outputs[0])
            item = spec.shape[1:]  # the class axis is the last; other free axes are 1 for one question
            classes = int(np.prod([d for d in item if d > 0])) if item and item[-1] > 0 else None
            if classes is not None and classes != len(b.labels):
                err(f"labels= names {len(b.labels)} classes; model {b.model!r} output {spec.name!r} has {classes}")
    return out


__all__ = ["CatalogModels", "bindings", "check_bindings", "model_input", "answer_from_output"]
