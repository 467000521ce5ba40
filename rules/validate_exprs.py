"""Expression checks: function calls (defined, arity, constant argument types), special forms
(bind, if, while, loop-for-count, foreach, switch, assert, modify, ...), fact-set queries,
facts in deffacts and assert, unsafe functions, and constants CLIPS reads as overflowing.

Expressions nest without limit, so they are checked without recursion: each check is a
generator that yields the sub-expressions it needs checked (`(expr, bound, rule, addresses,
lhs)`), and `expr` runs them with an explicit stack, in source order.
"""

from __future__ import annotations

from collections.abc import Iterator

from . import ast
from .builtin_types import BUILTIN_RETURNS
from .builtins import BUILTIN_ARG_TYPES, BUILTIN_ARITY
from .errors import Diagnostic
from .safety import UNSAFE_FUNCTIONS
from .validate_common import (
    LETTER_NAMES,
    TYPE_LETTER,
    bare,
    show,
)
from .validate_forms import FormChecks

_CONTROL = {
    "if",
    "while",
    "loop-for-count",
    "progn$",
    "foreach",
    "switch",
    "bind",
    "assert",
    "modify",
    "duplicate",
    "retract",
    "progn",
    "return",
    "break",
}
_FACT_QUERIES = {
    "do-for-fact",
    "do-for-all-facts",
    "delayed-do-for-all-facts",
    "find-fact",
    "find-all-facts",
    "any-factp",
}
_INSTANCE_QUERIES = {
    "do-for-instance",
    "do-for-all-instances",
    "delayed-do-for-all-instances",
    "find-instance",
    "find-all-instances",
    "any-instancep",
}
# COOL functions whose arguments include slot overrides `(slot value)` that are not calls.
_SLOT_OVERRIDE_FUNCS = {
    "make-instance",
    "modify-instance",
    "active-modify-instance",
    "message-modify-instance",
    "active-message-modify-instance",
    "duplicate-instance",
    "active-duplicate-instance",
    "message-duplicate-instance",
    "active-message-duplicate-instance",
    "initialize-instance",
    "active-initialize-instance",
    "active-make-instance",
}


Steps = Iterator[tuple]


class ExprChecks(FormChecks):
    """Expressions; expects `self.defs`, `self.allow_unsafe`, `self.unsafe`, `self.check_value`."""

    def safety(self, call: ast.Call) -> bool:
        """Report an unsafe call; True when the call may proceed."""
        head = call.head
        if head is None or self.allow_unsafe:
            return True
        reason = UNSAFE_FUNCTIONS.get(head)
        if (
            head == "funcall"
            and call.args
            and isinstance(call.args[0], ast.Atom)
            and call.args[0].kind in ("symbol", "string")
            and str(call.args[0].value) not in UNSAFE_FUNCTIONS
        ):
            return True
        if reason is None:
            return True
        d = Diagnostic(
            self.file,
            call.items[0].pos.line,
            call.items[0].pos.column,
            f"unsafe function '{head}' ({reason}) is refused; allow_unsafe=True "
            "(CLI --allow-unsafe, setting WORKBENCH_ALLOW_UNSAFE_RULES) permits it",
        )
        self.diagnostics.append(d)
        self.unsafe.append(d)
        return False

    def expr(
        self, e: ast.Expr, bound: set[str], r: ast.RuleDef | None, addresses: dict | None = None, lhs: bool = False
    ) -> None:
        """Check an expression and everything nested in it (`bound`: variables bound so far, updated by bind)."""
        if isinstance(e, ast.Atom):
            self.atom(e, bound, r, lhs)
        else:
            self.drive(self.expr_steps(e, bound, r, addresses, lhs))

    def drive(self, steps: Steps) -> None:
        """Run a check and the sub-checks it yields, depth first, with an explicit stack."""
        stack = [steps]
        while stack:
            sub = next(stack[-1], None)  # steps are tuples, never None
            if sub is None:
                stack.pop()
                continue
            if type(sub[0]) is ast.Atom:
                self.atom(sub[0], sub[1], sub[2], sub[4] if len(sub) > 4 else False)
            else:
                stack.append(self.expr_steps(*sub))

    def atom(self, e: ast.Atom, bound: set[str], r: ast.RuleDef | None, lhs: bool = False) -> None:
        if e.kind in ("variable", "mf_variable"):
            name, _, slot = str(e.value).partition(":")
            var = name if slot else str(e.value)  # ?p:slot in queries and handlers reads slot of ?p
            if var not in bound:
                self.error(
                    e.pos,
                    f"variable ?{var} is used but never bound"
                    + (" before this point" if lhs else (f" on the left-hand side of rule {r.name}" if r else "")),
                )
        elif e.kind == "global" and not self.global_visible(str(e.value)):
            if self.in_deffacts:  # CLIPS evaluates deffacts at (reset): it loads them, reset fails
                self.warning(
                    e.pos, f"global variable ?*{e.value}* is not defined by any defglobal; (reset) will fail here"
                )
            else:
                hint = self.defs.hidden("defglobal", str(e.value))
                self.error(e.pos, f"global variable ?*{e.value}* is not defined by any defglobal{hint}")
        elif e.kind in ("wildcard", "mf_wildcard"):
            self.error(e.pos, "a wildcard cannot be used as a value in an expression")

    def expr_steps(
        self, e: ast.Expr, bound: set[str], r: ast.RuleDef | None, addresses: dict | None = None, lhs: bool = False
    ) -> Steps:
        addresses = addresses if addresses is not None else {}
        if isinstance(e, ast.Atom):
            self.atom(e, bound, r, lhs)
            return
        head = e.head
        if head is None:
            self.error(e.pos, f"expected a function name after '(', got {show(e.items[0]) if e.items else ')'}")
            return
        if head in UNSAFE_FUNCTIONS and not self.safety(e):  # `safety` passes every other call
            return
        args = e.items[1:]
        name_pos = e.items[0].pos
        if head in _CONTROL:
            yield from self.control(e, head, args, bound, r, addresses)
            return
        if head in _FACT_QUERIES or head in _INSTANCE_QUERIES:
            yield from self.query(e, args, bound, r, addresses, facts=head in _FACT_QUERIES)
            return
        self.arity(head, len(args), name_pos)
        self.arg_types(head, args)
        self.overflow(e, head, args)
        if head in _SLOT_OVERRIDE_FUNCS:
            for a in args:
                if isinstance(a, ast.Call) and a.head is not None and not self.known_function(a.head):
                    for v in a.args:
                        yield (v, bound, r, addresses, lhs)
                else:
                    yield (a, bound, r, addresses, lhs)
            return
        for a in args:
            if type(a) is ast.Atom:  # checked here: what `drive` would do with it, without a round trip
                self.atom(a, bound, r, lhs)
            else:
                yield (a, bound, r, addresses, lhs)

    def overflow(self, e: ast.Call, head: str, args: list[ast.Expr]) -> None:
        """Warn where integer arithmetic on constants leaves the 64-bit range (CLIPS wraps around)."""
        if head not in ("+", "-", "*") or len(args) < 2 or bare(head) in self.defs.functions:
            return
        if not all(isinstance(a, ast.Atom) and a.kind == "integer" for a in args):
            return
        values = [int(a.value) for a in args]  # type: ignore[union-attr]
        total = values[0]
        for v in values[1:]:
            total = total + v if head == "+" else (total - v if head == "-" else total * v)
        if not LLONG_MIN <= total <= LLONG_MAX:
            wrapped = (total - LLONG_MIN) % 2**64 + LLONG_MIN
            self.warning(
                e.items[0].pos,
                f"integer overflow: ({head} {' '.join(str(v) for v in values)}) is {total}, outside CLIPS's "
                f"64-bit range; CLIPS gives {wrapped} (it wraps around)",
            )

    def global_visible(self, name: str) -> bool:
        """Whether ?*name* (or ?*M::name*) is a defglobal the current module sees."""
        return self.defs.sees("defglobal", name) if "::" in name else name in self.defs.globals

    def known_function(self, name: str) -> bool:
        n = bare(name)
        if n != name and n not in BUILTIN_ARITY and n not in self.defs.python_functions:
            return self.defs.sees("deffunction", name) or self.defs.sees("defgeneric", name)
        return (
            n in BUILTIN_ARITY or n in self.defs.functions or n in self.defs.generics or n in self.defs.python_functions
        )

    def arity(self, head: str, n: int, pos: ast.Pos) -> None:
        name = bare(head)
        fn = self.defs.functions.get(name)
        if name != head and not self.known_function(head):  # M::f: f of module M, visible here
            self.error(pos, f"undefined function '{head}': module {self.defs.module} sees no {name} of that module")
            return
        if fn is not None:
            lo, hi = len(fn.params), None if fn.wildcard else len(fn.params)
        elif name in self.defs.generics or name in self.defs.python_functions:
            return
        elif name in BUILTIN_ARITY:
            lo, hi = BUILTIN_ARITY[name]
        else:
            options = [*BUILTIN_ARITY, *self.defs.functions, *self.defs.python_functions]
            hint = self.defs.hidden("deffunction", name) or self.defs.hidden("defgeneric", name)
            self.error(pos, f"undefined function '{name}'{hint or self._suggest(name, options)}")
            return
        if n < lo or (hi is not None and n > hi):
            want = f"exactly {lo}" if lo == hi else (f"at least {lo}" if hi is None else f"{lo} to {hi}")
            self.error(pos, f"function '{name}' expects {want} argument{'s' if (hi or lo) != 1 else ''}, got {n}")

    def arg_types(self, head: str, args: list[ast.Expr]) -> None:
        """Constant arguments of built-ins must have a type CLIPS allows there (CLIPS checks this statically)."""
        name = bare(head)
        if name in self.defs.functions or name in self.defs.generics or name not in BUILTIN_ARG_TYPES:
            return
        default, per = BUILTIN_ARG_TYPES[name]
        for i, a in enumerate(args):
            letters = per[i] if i < len(per) else default
            if letters in ("", "*"):
                continue
            if isinstance(a, ast.Atom):
                if a.kind in TYPE_LETTER and TYPE_LETTER[a.kind] not in letters:
                    allowed = _allowed(letters)
                    self.error(a.pos, f"function '{name}' expects argument #{i + 1} to be {allowed}, got {show(a)}")
                elif a.kind in ("variable", "mf_variable"):
                    self.variable_type(name, i, a, letters)
                continue
            returns = self.returns(a)
            if returns and not set(returns) & set(letters):
                allowed = _allowed(letters)
                gives = " or ".join(LETTER_NAMES[ch] for ch in returns)
                self.error(
                    a.pos,
                    f"[ARGACCES2] function '{name}' expects argument #{i + 1} to be {allowed}, "
                    f"got {show(a)}, which returns {gives}",
                )

    def variable_type(self, name: str, i: int, a: ast.Atom, letters: str) -> None:
        """A variable whose LHS binding fixes its type (a multifield, a typed slot, a fact address)
        passed where that type is not allowed: CLIPS refuses the rule ([RULECSTR2/3])."""
        var = str(a.value)
        have = self.var_types.get(var)
        if not have or var in self.rebound or set(have) & set(letters):
            return
        allowed = _allowed(letters)
        gives = " or ".join(LETTER_NAMES[ch] for ch in have if ch in LETTER_NAMES)
        self.error(
            a.pos,
            f"[RULECSTR3] variable ?{var} is bound to {gives} on the left-hand side, but function "
            f"'{name}' expects argument #{i + 1} to be {allowed}",
        )

    def returns(self, e: ast.Expr) -> str:
        """Type letters a call to a built-in returns ('' when unknown or redefined)."""
        head = e.head if isinstance(e, ast.Call) else None
        if head is None:
            return ""
        name = bare(head)
        if name in self.defs.functions or name in self.defs.generics or name in self.defs.python_functions:
            return ""
        return BUILTIN_RETURNS.get(name, "")


def _allowed(letters: str) -> str:
    """The types of restriction letters, for messages: "an integer or a float"."""
    return " or ".join(LETTER_NAMES[ch] for ch in letters if ch in LETTER_NAMES)


LLONG_MAX = 2**63 - 1
LLONG_MIN = -(2**63)
