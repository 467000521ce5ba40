"""Goals in CLIPS pattern syntax: `(ancestor ?x otto)`, `(person (name ?n) (age ?a&:(> ?a 30)))`.

A goal is one pattern or several (a conjunction), parsed with the rule-language parser as the
left-hand side of a rule, so every pattern form CLIPS accepts is accepted here.
"""

from __future__ import annotations

from rules import KnowledgeBase, RuleError, ast, parse
from rules.validate import Validator

from .errors import GoalSyntaxError

_PREFIX = "(defrule __goal__ "


def parse_goal(text: str, kb: KnowledgeBase | None = None) -> list[ast.CE]:
    """Parse goal text into conditional elements.

    Raises:
        GoalSyntaxError: `goal:1:COL: message`, columns counted in the goal text; also for
            unknown templates or slots when `kb` is given.
    """
    if not text or not text.strip():
        raise GoalSyntaxError("goal:1:1: empty goal; expected a pattern such as (ancestor ?x otto)")
    source = _PREFIX + text + "\n => )"
    try:
        module = parse(source, "goal")
    except RuleError as exc:
        d = exc.diagnostics[0]
        col = d.column - len(_PREFIX) if d.line == 1 else len(text) + 1  # errors in our suffix: at the goal's end
        unclosed = _unclosed(text)
        if d.line != 1 and unclosed > 0:  # name what the user wrote, not the '=>' of our wrapping
            raise GoalSyntaxError(f"goal:1:{col}: the goal ends with {unclosed} unclosed '('; expected ')'") from None
        msg = d.message.replace("defrule starting at line 1, column 1", "the goal")
        raise GoalSyntaxError(f"goal:1:{max(col, 1)}: {msg}") from None
    if len(module.constructs) != 1 or not isinstance(module.constructs[0], ast.RuleDef):
        raise GoalSyntaxError("goal:1:1: expected pattern(s) only")
    rule = module.constructs[0]
    if not rule.lhs:
        raise GoalSyntaxError("goal:1:1: expected at least one pattern")
    if kb is not None:
        v = Validator(functions=kb.python_functions)
        v.defs.templates.update(kb.templates)
        v.defs.functions.update(kb.functions)
        v.defs.globals.update(kb.globals)
        v.file = "goal"
        v.ces(rule.lhs, set(), None, {}, negated=False)  # type: ignore[arg-type]
        if v.diagnostics:
            d = v.diagnostics[0]
            col = d.column - len(_PREFIX) if d.line == 1 else d.column
            raise GoalSyntaxError(f"goal:{d.line}:{max(col, 1)}: {d.message}")
    return rule.lhs


def _unclosed(text: str) -> int:
    """How many '(' of `text` are still open at its end (parentheses inside strings not counted)."""
    depth, in_string, escaped = 0, False, False
    for ch in text:
        if in_string:
            escaped, in_string = (ch == "\\" and not escaped), in_string and not (ch == '"' and not escaped)
            continue
        if ch == '"':
            in_string = True
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
    return depth
