"""Scenario tests for knowledge bases (`workbench kb test FILE.yaml`), as Drools' test scenarios.

A scenario file names a knowledge base and lists scenarios; each asserts facts, runs the rules
forward (CLIPS) and checks what came out; `answers` checks a goal proved backwards::

    knowledge_base: [loan.clp, loan_table.csv]      # relative to the scenario file
    scenarios:
      - name: low income is rejected
        facts: [{template: applicant, slots: {income: 0}}]      # as `kb run --facts`
        expect:
          facts: [{template: decision, slots: {action: reject}}]  # each matches some final fact
          not_facts: [{template: decision, slots: {action: approve}}]
          fired: [reject-no-income]                             # each fired at least once
          output: "rejected"                                    # a substring of the printed text
          answers: {goal: "(decision (action ?a))", bindings: [{a: reject}]}

A pattern is `{template, slots}` (or `{template, values}` for ordered facts); slots it does not
name are not compared. `answers.bindings` is the complete set of answers, in any order (`[]`: the
goal cannot be proved; `[{}]`: proved, with no variables).

Errors: `ScenarioFileError` for a malformed file (message `file: scenarios[i].field: ...`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

import rules
from rules import yaml_core
from rules.facts import IMPLIED, Fact

EXPECT_KEYS = ("facts", "not_facts", "fired", "output", "answers")


class ScenarioFileError(ValueError):
    """The scenario file cannot be read or does not have the documented shape; names file and field."""


@dataclass(slots=True)
class Pattern:
    """`{template, slots}`: matches a fact of `template` whose named slots equal the given values."""

    template: str
    slots: dict[str, Any]
    where: str = field(default="", compare=False)

    def matches(self, fact: Fact) -> bool:
        if fact.template != self.template:
            return False
        return all(name in fact.slots and _same(fact.slots[name], want) for name, want in self.slots.items())

    def __str__(self) -> str:
        inner = " ".join(f"({k} {_text(v)})" for k, v in self.slots.items())
        return f"({self.template}{' ' + inner if inner else ''})"


@dataclass(slots=True)
class Scenario:
    name: str
    facts: list[Fact]
    expect: dict[str, Any]


@dataclass(slots=True)
class Failure:
    """One unmet expectation: `check` (facts, not_facts, fired, output, answers, error), text of both sides."""

    check: str
    expected: str
    actual: str

    def to_dict(self) -> dict[str, str]:
        return {"check": self.check, "expected": self.expected, "actual": self.actual}


@dataclass(slots=True)
class ScenarioResult:
    name: str
    failures: list[Failure] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def passed(self) -> bool:
        return not self.failures

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "passed": self.passed,
            "seconds": round(self.seconds, 6),
            "failures": [f.to_dict() for f in self.failures],
        }


@dataclass(slots=True)
class ScenarioFile:
    path: Path
    knowledge_base: list[Path]
    scenarios: list[Scenario]

    @classmethod
    def read(cls, path: str | Path) -> ScenarioFile:
        """Read and check a scenario file. Raises ScenarioFileError naming the file and field."""
        path = Path(path)
        try:
            doc = yaml_core.load(path.read_text(encoding="utf-8"))  # YAML 1.2 booleans: `value: yes` is "yes"
        except OSError as exc:
            raise ScenarioFileError(f"{path}: cannot read: {exc.strerror}") from None
        except UnicodeDecodeError as exc:
            raise ScenarioFileError(f"{path}: not UTF-8 text (byte {exc.start})") from None
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
            raise ScenarioFileError(f"{where}: invalid YAML: {getattr(exc, 'problem', exc)}") from None
        if not isinstance(doc, dict):
            raise ScenarioFileError(f"{path}: expected a mapping with knowledge_base and scenarios")
        unknown = sorted(set(doc) - {"knowledge_base", "scenarios"})
        if unknown:
            raise ScenarioFileError(f"{path}: unknown field {unknown[0]!r} (expected knowledge_base, scenarios)")
        kb = doc.get("knowledge_base")
        kb = [kb] if isinstance(kb, str) else kb
        if not kb or not isinstance(kb, list) or not all(isinstance(f, str) for f in kb):
            raise ScenarioFileError(f"{path}: knowledge_base: expected a file name or a list of file names")
        items = doc.get("scenarios")
        if not isinstance(items, list) or not items:
            raise ScenarioFileError(f"{path}: scenarios: expected a non-empty list")
        scenarios = [_scenario(path, i, item) for i, item in enumerate(items)]
        names = [s.name for s in scenarios]
        dup = next((n for n in names if names.count(n) > 1), None)
        if dup is not None:
            raise ScenarioFileError(f"{path}: scenarios: the name {dup!r} is used twice")
        return cls(path, [path.parent / f for f in kb], scenarios)


def run_scenarios(spec: ScenarioFile, *, allow_unsafe: bool = False, timeout: float = 60.0) -> list[ScenarioResult]:
    """Run every scenario on a fresh evaluation of the knowledge base; returns one result each.

    Raises rules.RuleError when the knowledge base does not load (with its located diagnostics);
    ScenarioFileError when an expected pattern or goal does not fit it (`check_against`).
    """
    from chaining.forward import EngineConfig, ForwardEngine, ForwardError

    kb = rules.load_knowledge_base(spec.knowledge_base, allow_unsafe=allow_unsafe)
    check_against(spec, kb)
    engine = ForwardEngine.from_knowledge_base(kb, config=EngineConfig(workers=1, timeout=timeout))
    results = []
    try:
        for sc in spec.scenarios:
            res = ScenarioResult(sc.name)
            try:
                out = engine.evaluate(sc.facts, timeout=timeout)
            except ForwardError as exc:
                partial = getattr(exc, "partial", None)
                res.failures.append(Failure("error", "the rules run to the end", str(exc)))
                out = partial
            if out is not None:
                res.seconds = out.seconds
                _check_forward(sc, out, res)
            if "answers" in sc.expect:
                _check_answers(kb, sc, res, timeout)
            results.append(res)
    finally:
        engine.close()
    return results


def check_against(spec: ScenarioFile, kb: Any) -> None:
    """Check every `expect.facts` / `expect.not_facts` pattern and `expect.answers.goal` against `kb`.

    A pattern with named slots must name a deftemplate of the knowledge base and slots it has (a
    misspelt name would make `not_facts` pass vacuously); a `values` pattern must not name a
    deftemplate (those have slots). A pattern with neither may name an ordered relation, which
    needs no deftemplate, so it is not checked. Goals must parse (as `kb ask` parses them).

    Raises:
        ScenarioFileError: `file: scenarios[i].expect.not_facts[j]: template 'clas' is not
            defined; did you mean 'class'?`, or `...: template class has no slot 'nme'; ...`.
    """
    import difflib

    from chaining.backward import GoalSyntaxError
    from chaining.backward.goals import parse_goal

    def hint(name: str, options: Any) -> str:
        close = difflib.get_close_matches(name, list(options), n=1)
        return f"; did you mean '{close[0]}'?" if close else ""

    for i, sc in enumerate(spec.scenarios):
        for key in ("facts", "not_facts"):
            for j, pat in enumerate(sc.expect.get(key, [])):
                where = pat.where or f"{spec.path}: scenarios[{i}].expect.{key}[{j}]"
                tmpl = kb.templates.get(pat.template)
                ordered = IMPLIED in pat.slots
                if tmpl is None:
                    if pat.slots and not ordered:
                        raise ScenarioFileError(
                            f"{where}: template {pat.template!r} is not defined{hint(pat.template, kb.templates)}"
                        )
                    continue
                if ordered:
                    raise ScenarioFileError(f"{where}: {pat.template!r} is a deftemplate; give slots, not values")
                for slot in pat.slots:
                    if slot not in tmpl.slots:
                        more = hint(slot, tmpl.slots) or f" (slots: {', '.join(tmpl.slots)})"
                        raise ScenarioFileError(f"{where}: template {pat.template} has no slot {slot!r}{more}")
        if "answers" in sc.expect:
            try:
                parse_goal(sc.expect["answers"]["goal"], kb)
            except GoalSyntaxError as exc:
                raise ScenarioFileError(f"{spec.path}: scenarios[{i}].expect.answers.goal: {exc}") from None


def _check_forward(sc: Scenario, out: Any, res: ScenarioResult) -> None:
    facts: list[Fact] = list(out.facts)
    fired = [f.rule for f in out.firings]
    for pat in sc.expect.get("facts", []):
        if not any(pat.matches(f) for f in facts):
            res.failures.append(Failure("facts", str(pat), _present(facts, pat.template)))
    for pat in sc.expect.get("not_facts", []):
        hits = [f for f in facts if pat.matches(f)]
        if hits:
            res.failures.append(Failure("not_facts", f"no {pat}", "; ".join(str(f) for f in hits[:5])))
    for rule in sc.expect.get("fired", []):
        if rule not in fired:
            res.failures.append(Failure("fired", rule, ", ".join(dict.fromkeys(fired)) or "no rule fired"))
    text = sc.expect.get("output")
    if text is not None and text not in out.output:
        res.failures.append(Failure("output", f"text containing {text!r}", repr(out.output[-300:])))


def _check_answers(kb: Any, sc: Scenario, res: ScenarioResult, timeout: float) -> None:
    from chaining.backward import BackwardError, ProverConfig, ScriptedProvider, Session

    spec = sc.expect["answers"]
    try:
        session = Session(kb, facts=sc.facts, provider=ScriptedProvider({}), config=ProverConfig(timeout=timeout))
        proved = session.prove_sync(spec["goal"], limit=None)
    except BackwardError as exc:
        res.failures.append(Failure("answers", spec["goal"], f"error: {exc}"))
        return
    got = sorted(_binding_key(a.bindings) for a in proved.answers)
    want = sorted(_binding_key(b) for b in spec["bindings"])
    if got != want:
        res.failures.append(Failure("answers", _bindings_text(want), _bindings_text(got)))


def _scenario(path: Path, i: int, item: Any) -> Scenario:
    where = f"{path}: scenarios[{i}]"
    if not isinstance(item, dict):
        raise ScenarioFileError(f"{where}: expected a mapping with name, facts and expect")
    unknown = sorted(set(item) - {"name", "facts", "expect"})
    if unknown:
        raise ScenarioFileError(f"{where}: unknown field {unknown[0]!r} (expected name, facts, expect)")
    name = item.get("name")
    if not isinstance(name, str) or not name.strip():
        raise ScenarioFileError(f"{where}.name: expected a non-empty string")
    try:
        facts = rules.facts_from_json(item.get("facts") or [], f"scenarios[{i}].facts")
    except rules.FactError as exc:
        raise ScenarioFileError(f"{path}: {exc}") from None
    expect = item.get("expect")
    if not isinstance(expect, dict) or not expect:
        raise ScenarioFileError(f"{where}.expect: expected a mapping with at least one of {', '.join(EXPECT_KEYS)}")
    bad = sorted(set(expect) - set(EXPECT_KEYS))
    if bad:
        raise ScenarioFileError(f"{where}.expect: unknown check {bad[0]!r} (expected {', '.join(EXPECT_KEYS)})")
    checked: dict[str, Any] = {}
    for key in ("facts", "not_facts"):
        if key in expect:
            if not isinstance(expect[key], list):
                raise ScenarioFileError(f"{where}.expect.{key}: expected a list of patterns")
            checked[key] = [_pattern(f"{where}.expect.{key}[{j}]", p) for j, p in enumerate(expect[key])]
    if "fired" in expect:
        fired = expect["fired"]
        if not isinstance(fired, list) or not all(isinstance(r, str) for r in fired):
            raise ScenarioFileError(f"{where}.expect.fired: expected a list of rule names")
        checked["fired"] = fired
    if "output" in expect:
        if not isinstance(expect["output"], str):
            raise ScenarioFileError(f"{where}.expect.output: expected a string")
        checked["output"] = expect["output"]
    if "answers" in expect:
        ans = expect["answers"]
        if not isinstance(ans, dict) or not isinstance(ans.get("goal"), str) or "bindings" not in ans:
            raise ScenarioFileError(f"{where}.expect.answers: expected {{goal: '(...)', bindings: [...]}}")
        if not isinstance(ans["bindings"], list) or not all(isinstance(b, dict) for b in ans["bindings"]):
            raise ScenarioFileError(f"{where}.expect.answers.bindings: expected a list of mappings variable -> value")
        checked["answers"] = ans
    return Scenario(name.strip(), facts, checked)


def _pattern(where: str, p: Any) -> Pattern:
    if not isinstance(p, dict) or not isinstance(p.get("template"), str):
        raise ScenarioFileError(f"{where}: expected {{template: NAME, slots: {{...}}}}")
    unknown = sorted(set(p) - {"template", "slots", "values"})
    if unknown:
        raise ScenarioFileError(f"{where}: unknown field {unknown[0]!r} (expected template, slots or values)")
    if "values" in p:
        if "slots" in p or not isinstance(p["values"], list):
            raise ScenarioFileError(f"{where}.values: expected a list (and no slots) for an ordered fact")
        return Pattern(p["template"], {IMPLIED: p["values"]}, where)
    slots = p.get("slots") or {}
    if not isinstance(slots, dict):
        raise ScenarioFileError(f"{where}.slots: expected a mapping slot -> value")
    return Pattern(p["template"], dict(slots), where)


def _same(have: Any, want: Any) -> bool:
    if isinstance(want, list) or isinstance(have, tuple):
        want_t = want if isinstance(want, list) else [want]
        have_t = have if isinstance(have, tuple) else (have,)
        return len(want_t) == len(have_t) and all(_same(h, w) for h, w in zip(have_t, want_t, strict=True))
    if isinstance(want, bool):  # YAML `yes`/`true` against a CLIPS symbol TRUE/FALSE or yes/no
        return str(have).lower() in (("true", "yes") if want else ("false", "no"))
    if isinstance(want, (int, float)) and isinstance(have, (int, float)):
        return have == want
    return str(have) == str(want)


def _text(v: Any) -> str:
    if isinstance(v, (list, tuple)):
        return " ".join(_text(x) for x in v)
    return str(v)


def _present(facts: list[Fact], template: str) -> str:
    same = [str(f) for f in facts if f.template == template]
    if not same:
        return f"no {template} fact"
    more = f" (+{len(same) - 5} more)" if len(same) > 5 else ""
    return "; ".join(same[:5]) + more


def _binding_key(b: Mapping[str, Any]) -> tuple:
    return tuple(sorted((k.lstrip("?"), _text(v)) for k, v in b.items()))


def _bindings_text(keys: list[tuple]) -> str:
    if not keys:
        return "no answer"
    return "; ".join("{" + ", ".join(f"?{k}={v}" for k, v in key) + "}" if key else "yes" for key in keys)
