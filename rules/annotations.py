"""`;@` comment annotations: Workbench metadata that stays legal CLIPS (CLIPS sees comments).

Written on the line(s) right above a construct (no other construct in between), or anywhere
for the file-wide ones:

    ;@askable                        the next deftemplate is askable (its last slot is asked)
    ;@askable slot=value             ... asking for slot `value`; other slots identify the question
    ;@question "Does it have ?name?" question text for the next (askable) deftemplate; ?slot is
                                     replaced by that slot's value in the goal
    ;@askable flies swims            ordered relations `(flies ...)` and `(swims ...)` are askable
                                     (yes/no questions about ground facts); anywhere in the file
    ;@cf 0.8                         certainty factor of the next defrule (or of every fact of the
                                     next deffacts), in [-1, 1]
    ;@certainty-factors              turn certainty factors on for the knowledge base (anywhere;
                                     any `;@cf` turns them on too)
    ;@model NAME input=SLOT ...      the next deftemplate is answered by catalogue model NAME (a
                                     model-backed relation: askable, asked of the model, never of
                                     a person); options below (`ModelBinding`)
    ;@model NAME REL... input=N ...  ordered relations REL answered by the model as yes/no
                                     questions (input=N: the N-th field); anywhere in the file

`;@model` options: `slot=S` the asked slot (default: the last); `input=SLOT` (a model with one
input) or `input.NAME=SLOT` per model input NAME (ordered relations: a field number, from 1);
`output=NAME` (default: the first output); `labels=a,b,c` the class labels (default: the class
index); `yes=LABEL` the class meaning yes (ordered relations; default: the last class);
`threshold=P` in (0, 1] (default 0.5); `scores=auto|logits|probabilities` (default auto).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field

from . import ast
from .errors import Diagnostic

KNOWN = ("askable", "question", "cf", "certainty-factors", "model")
MODEL_OPTIONS = ("slot", "input", "output", "labels", "yes", "threshold", "scores")


@dataclass(slots=True)
class ModelBinding:
    """A relation answered by a catalogue model (`;@model`): how a question becomes a model input
    and the output an answer.

    `inputs`: model input name ("" for a model's only input) -> the slot giving its value (an
    ordered relation: the field number, "1" first). `output`: the output read (None: the first).
    `labels`: class labels in output order (None: the class index is the answer). `yes`: the class
    whose probability means yes (ordered relations; None: the last class). `threshold`: least
    probability for an answer (a yes/no question: for yes). `scores`: "logits" (softmax / sigmoid
    applied), "probabilities" or "auto" (probabilities when they already sum to one). `file`,
    `line`, `column`: where the annotation is, for located errors about the model.
    """

    model: str
    inputs: dict[str, str] = field(default_factory=dict)
    output: str | None = None
    labels: list[str | int | float] | None = None
    yes: str | None = None
    threshold: float = 0.5
    scores: str = "auto"
    file: str = ""
    line: int = 0
    column: int = 0

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"


@dataclass(slots=True)
class AskableSpec:
    """How to ask for facts of `relation`.

    `ask_slot`: the template slot whose value is asked (None: a yes/no question about a ground
    ordered fact). `question`: text with `?slot` placeholders, or None for a generated one.
    `allowed`: the allowed answers (from the slot's allowed-values; ["yes", "no"] for yes/no).
    """

    relation: str
    ask_slot: str | None = None
    question: str | None = None
    allowed: list | None = None
    key_slots: list[str] = field(default_factory=list)
    model: ModelBinding | None = None  # answered by this model (`;@model`), not by a person


@dataclass(slots=True)
class Annotations:
    askable: dict[str, AskableSpec] = field(default_factory=dict)
    rule_cf: dict[str, float] = field(default_factory=dict)
    facts_cf: dict[str, float] = field(default_factory=dict)
    certainty_factors: bool = False


def read_annotations(
    modules: list[ast.Module], templates: dict[str, ast.TemplateDef]
) -> tuple[Annotations, list[Diagnostic]]:
    """Collect annotations from every module; diagnostics for unknown keys or bad values."""
    out = Annotations()
    diags: list[Diagnostic] = []
    for m in modules:
        targets = _targets(m)
        pending_question: dict[str, str] = {}
        for c, target in targets:
            key, _, value = c.text[2:].strip().partition(" ")
            value = value.strip()

            def err(msg: str, filename: str = m.filename, pos=c.pos) -> None:
                diags.append(Diagnostic(filename, pos.line, pos.column, msg))

            if key not in KNOWN:
                err(f"unknown annotation ';@{key}'; expected one of: {', '.join(';@' + k for k in KNOWN)}")
                continue
            try:
                words = shlex.split(value)
            except ValueError as exc:
                err(f"cannot read ;@{key} value: {exc}")
                continue
            if key == "certainty-factors":
                out.certainty_factors = True
            elif key == "cf":
                try:
                    cf = float(words[0]) if len(words) == 1 else None
                except ValueError:
                    cf = None
                if cf is None or not -1.0 <= cf <= 1.0:
                    err(f";@cf expects one number in [-1, 1], got {value!r}")
                    continue
                out.certainty_factors = True
                if isinstance(target, ast.RuleDef):
                    out.rule_cf[target.name] = cf
                elif isinstance(target, ast.FactsDef):
                    out.facts_cf[target.name] = cf
                else:
                    err(";@cf must be written right above a defrule or deffacts")
            elif key == "question":
                if len(words) != 1:
                    err(';@question expects one quoted text, e.g. ;@question "Does it have ?name?"')
                elif not isinstance(target, ast.TemplateDef):
                    err(";@question must be written right above a deftemplate")
                else:
                    pending_question[target.name] = words[0]
            elif key == "askable":
                opts = dict(w.split("=", 1) for w in words if "=" in w)
                names = [w for w in words if "=" not in w]
                bad = set(opts) - {"slot"}
                if bad:
                    err(f"unknown ;@askable option(s) {sorted(bad)}; expected slot=NAME")
                    continue
                if names:
                    for n in names:
                        t = templates.get(n)
                        out.askable[n] = _spec(n, t, opts.get("slot"), err)
                elif isinstance(target, ast.TemplateDef):
                    out.askable[target.name] = _spec(target.name, target, opts.get("slot"), err)
                else:
                    err(";@askable without relation names must be written right above a deftemplate")
            elif key == "model":
                _model(words, target, templates, out, err, m.filename, c.pos)
        for name, q in pending_question.items():
            if name in out.askable:
                out.askable[name].question = q
            else:
                t = templates.get(name)
                diags.append(
                    Diagnostic(
                        m.filename,
                        t.pos.line if t else 1,
                        t.pos.column if t else 1,
                        f";@question given for deftemplate {name}, which is not ;@askable",
                    )
                )
    return out, diags


def _model(words: list[str], target, templates, out: Annotations, err, filename: str, pos) -> None:
    """Read `;@model NAME [REL...] option=value...` into askable specs carrying a ModelBinding."""
    if not words or "=" in words[0]:
        err(";@model expects the catalogue model's name first, e.g. ;@model demo-digits input.pixels=pixels")
        return
    name, rest = words[0], words[1:]
    opts: dict[str, str] = {}
    inputs: dict[str, str] = {}
    for w in (w for w in rest if "=" in w):
        k, v = w.split("=", 1)
        if k.startswith("input."):
            inputs[k[len("input.") :]] = v
        elif k == "input":
            inputs[""] = v
        elif k in MODEL_OPTIONS:
            opts[k] = v
        else:
            err(f"unknown ;@model option {k!r}; expected one of: {', '.join(MODEL_OPTIONS)}, input.NAME")
            return
    if not inputs or any(not k and len(inputs) > 1 for k in inputs) or not all(inputs.values()):
        err(";@model needs its input mapping: input=SLOT (a model with one input) or input.NAME=SLOT per input")
        return
    try:
        threshold = float(opts.get("threshold", 0.5))
    except ValueError:
        threshold = -1.0
    if not 0.0 < threshold <= 1.0:
        err(f";@model threshold={opts.get('threshold')} must be a probability in (0, 1]")
        return
    scores = opts.get("scores", "auto")
    if scores not in ("auto", "logits", "probabilities"):
        err(f";@model scores={scores} must be auto, logits or probabilities")
        return
    labels = [_label(x) for x in opts["labels"].split(",") if x] if "labels" in opts else None
    if labels is not None and not labels:
        err(";@model labels= needs the class labels, comma-separated")
        return
    yes = opts.get("yes")
    if yes is not None and labels is not None and yes not in [str(x) for x in labels]:
        err(f";@model yes={yes} is not one of the labels ({', '.join(labels)})")
        return
    binding = ModelBinding(
        name, inputs, opts.get("output"), labels, yes, threshold, scores, filename, pos.line, pos.column
    )
    names = [w for w in rest if "=" not in w]
    if names:  # ordered relations: yes/no questions about ground facts; inputs are field numbers
        if "slot" in opts:
            err(";@model slot= applies to a deftemplate; ordered relations are asked as yes/no questions")
            return
        for n in names:
            if n in templates:
                err(f";@model names {n}, which has a deftemplate: write ;@model right above it instead")
                return
        bad = [v for v in inputs.values() if not v.isdigit() or int(v) < 1]
        if bad:
            err(f";@model input of an ordered relation is a field number (1 = the first field), got {bad[0]}")
            return
        for n in names:
            out.askable[n] = AskableSpec(n, None, None, ["yes", "no"], [], binding)
        return
    if not isinstance(target, ast.TemplateDef):
        err(";@model without relation names must be written right above a deftemplate")
        return
    spec = _spec(target.name, target, opts.get("slot"), err)
    for slot in inputs.values():
        if slot not in target.slots:
            err(f";@model input {slot}: template {target.name} has no slot '{slot}' (slots: {', '.join(target.slots)})")
            return
        if slot == spec.ask_slot:
            err(f";@model input {slot} is the slot the model answers (slot={spec.ask_slot}); map another slot")
            return
    if spec.ask_slot is not None and yes is not None:
        err(";@model yes= applies to yes/no questions (ordered relations); a template's answer is the label")
        return
    spec.model = binding
    out.askable[target.name] = spec


def _label(text: str) -> str | int | float:
    """A class label as CLIPS reads the atom: `7` an integer, `0.5` a float, else a symbol."""
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def _spec(name: str, t: ast.TemplateDef | None, slot: str | None, err) -> AskableSpec:
    if t is None or not t.slots:
        if slot:
            err(f";@askable slot={slot}: {name} has no deftemplate with slots")
        return AskableSpec(name, None, None, ["yes", "no"], [])
    if slot is None:
        slot = list(t.slots)[-1]
    if slot not in t.slots:
        err(f";@askable slot={slot}: template {name} has no slot '{slot}' (slots: {', '.join(t.slots)})")
        slot = list(t.slots)[-1]
    allowed = t.slots[slot].allowed
    return AskableSpec(name, slot, None, allowed, [s for s in t.slots if s != slot])


def _targets(m: ast.Module) -> list[tuple[ast.Comment, ast.Construct | None]]:
    """Each `;@` comment with the construct right below it (None when another construct or nothing follows)."""
    out = []
    constructs = m.constructs
    for c in m.comments:
        if not c.text.startswith(";@"):
            continue
        target = None
        prev_end = 0
        for k in constructs:
            if k.pos.line > c.pos.line:
                target = k if prev_end < c.pos.line else None
                break
            prev_end = k.pos.end_line
            if k.pos.line <= c.pos.line <= k.pos.end_line:
                break
        out.append((c, target))
    return out
