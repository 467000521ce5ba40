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
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field

from . import ast
from .errors import Diagnostic

KNOWN = ("askable", "question", "cf", "certainty-factors")


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
