"""CLIPS text -> AST (`rules.ast`), with located syntax errors.

The grammar is `clips.lark` (LALR(1), contextual lexer). Lark's exceptions are turned into
`Diagnostic`s that say what was found, what was expected and, for a truncated file, which
construct was left open. Parsing never evaluates anything.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from . import ast
from .errors import Diagnostic, RuleSyntaxError

_GRAMMAR = Path(__file__).with_name("clips.lark")

CONSTRUCT_KEYWORDS = (
    "deftemplate",
    "deffacts",
    "defrule",
    "deffunction",
    "defglobal",
    "defmodule",
    "defclass",
    "defgeneric",
    "defmethod",
    "definstances",
    "defmessage-handler",
)

_FRIENDLY = {
    "LPAR": "'('",
    "RPAR": "')'",
    "SYMBOL": "a symbol",
    "STRING": "a string",
    "INTEGER": "an integer",
    "FLOAT": "a float",
    "SFVAR": "a variable such as ?x",
    "MFVAR": "a multifield variable such as $?x",
    "GLOBALVAR": "a global variable such as ?*x*",
    "SFWILD": "'?'",
    "MFWILD": "'$?'",
    "THEN": "'=>'",
    "INSTANCE_NAME": "an instance name such as [x]",
    "SLOT_KIND": "'slot' or 'multislot'",
    "OPAQUE_KIND": "a construct keyword",
    "NOT_CONN": "'~'",
    "COLON": "':'",
    "EQUALS": "'='",
    "$END": "end of file",
}


@functools.lru_cache(maxsize=1)
def _lark() -> Lark:
    return Lark(
        _GRAMMAR.read_text(), parser="lalr", lexer="contextual", propagate_positions=True, maybe_placeholders=False
    )


def parse(text: str, filename: str = "<string>") -> ast.Module:
    """Parse CLIPS source text into an `ast.Module`.

    Args:
        text: the rule file's contents.
        filename: used in diagnostics and positions.

    Raises:
        RuleSyntaxError: with one located `Diagnostic` (the first syntax error).
    """
    comments: list[Token] = []
    parser = _lark()
    try:
        # A fresh Lark per call would be slow; the callback list is per call via a lexer_conf copy.
        tree = _parse_collecting_comments(parser, text, comments)
    except UnexpectedInput as exc:
        raise RuleSyntaxError([_diagnostic(exc, text, filename)]) from None
    try:
        module = _Builder(text, filename).module(tree)
    except _BuildError as exc:
        raise RuleSyntaxError([Diagnostic(filename, exc.line, exc.column, exc.message)]) from None
    module.comments = [ast.Comment(str(c), _tok_pos(c)) for c in comments]
    _attach_annotations(module)
    return module


def _parse_collecting_comments(parser: Lark, text: str, comments: list[Token]) -> Tree:
    # Comments are ignored by the grammar; collect them with a scan that respects strings.
    for line, column, offset, body in _scan_comments(text):
        comments.append(
            Token(
                "COMMENT",
                body,
                start_pos=offset,
                line=line,
                column=column,
                end_line=line,
                end_column=column + len(body),
                end_pos=offset + len(body),
            )
        )
    return parser.parse(text)


def _scan_comments(text: str):
    i, line, col, n = 0, 1, 1, len(text)
    while i < n:
        ch = text[i]
        if ch == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            seg = text[i : j + 1]
            nl = seg.count("\n")
            if nl:
                line += nl
                col = len(seg) - seg.rfind("\n")
            else:
                col += len(seg)
            i = j + 1
            continue
        if ch == ";":
            j = text.find("\n", i)
            j = n if j < 0 else j
            yield line, col, i, text[i:j]
            col += j - i
            i = j
            continue
        if ch == "\n":
            line += 1
            col = 1
        else:
            col += 1
        i += 1


def open_parens(text: str, upto: int) -> list[tuple[int, int, int]]:
    """The '(' still open at offset `upto`, outermost first, as (offset, line, column); strings and comments skipped."""
    stack: list[tuple[int, int, int]] = []
    i, line, col = 0, 1, 1
    while i < upto:
        ch = text[i]
        if ch == '"':
            j = i + 1
            while j < len(text) and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            seg = text[i : j + 1]
            nl = seg.count("\n")
            line, col = (line + nl, len(seg) - seg.rfind("\n")) if nl else (line, col + len(seg))
            i = j + 1
            continue
        if ch == ";":
            j = text.find("\n", i)
            j = len(text) if j < 0 else j
            col += j - i
            i = j
            continue
        if ch == "(":
            stack.append((i, line, col))
        elif ch == ")" and stack:
            stack.pop()
        if ch == "\n":
            line, col = line + 1, 1
        else:
            col += 1
        i += 1
    return stack


def _construct_at(text: str, offset: int) -> str | None:
    stack = open_parens(text, offset)
    if not stack:
        return None
    start = stack[0][0] + 1
    word = text[start : start + 40].split()
    return f"{word[0] if word else '('} starting at line {stack[0][1]}, column {stack[0][2]}"


def _expected(exc: UnexpectedInput) -> str:
    names = sorted(getattr(exc, "expected", None) or getattr(exc, "allowed", None) or [])
    parser = _lark()
    out: list[str] = []
    for name in names:
        if name in _FRIENDLY:
            out.append(_FRIENDLY[name])
            continue
        try:
            term = parser.get_terminal(name)
            out.append(f"'{term.pattern.value}'" if term.pattern.type == "str" else name.lower())
        except KeyError:
            out.append(name.lower())
    out = sorted(set(out))
    if len(out) > 8:
        out = out[:8] + ["..."]
    return ", ".join(out)


def _unclosed_before_next(text: str, offset: int, filename: str) -> Diagnostic | None:
    """A construct left open when a later line starts a new construct at column 1: blame the open one."""
    stack = open_parens(text, offset)
    if not stack:
        return None
    start, line, col = stack[0]
    for m in re.finditer(r"(?m)^\((def[a-z-]*)\b", text[start + 1 : offset]):
        next_line = text.count("\n", 0, start + 1 + m.start()) + 1
        where = _construct_at(text, start + 1)
        return Diagnostic(
            filename,
            line,
            col,
            f"'(' of the {where.split(' starting')[0] if where else 'construct'} "
            f"is not closed before the next construct ({m.group(1)}) at line {next_line}",
        )
    return None


def _diagnostic(exc: UnexpectedInput, text: str, filename: str) -> Diagnostic:
    line, column = getattr(exc, "line", 1) or 1, getattr(exc, "column", 1) or 1
    offset = getattr(exc, "pos_in_stream", None)
    if isinstance(exc, UnexpectedToken):
        offset = exc.token.start_pos if exc.token.type != "$END" else len(text)
    if isinstance(exc, UnexpectedEOF):
        offset = len(text)
    if offset is not None:
        blamed = _unclosed_before_next(text, offset, filename)
        if blamed is not None:
            return blamed
    if isinstance(exc, UnexpectedCharacters):
        ch = text[exc.pos_in_stream] if exc.pos_in_stream < len(text) else ""
        if ch == '"':
            return Diagnostic(filename, line, column, "unterminated string: no closing '\"' before the end of the file")
        where = _construct_at(text, exc.pos_in_stream)
        ctx = f" in {where}" if where else ""
        return Diagnostic(filename, line, column, f"unexpected character {ch!r}{ctx}; expected {_expected(exc)}")
    if isinstance(exc, UnexpectedEOF) or (isinstance(exc, UnexpectedToken) and exc.token.type == "$END"):
        stack = open_parens(text, len(text))
        end_line = text.count("\n") + 1
        end_col = len(text) - (text.rfind("\n") + 1) + 1
        if stack:
            where = _construct_at(text, len(text))
            return Diagnostic(
                filename,
                end_line,
                end_col,
                f"unexpected end of file: {len(stack)} unclosed '(' ({where}); expected ')'",
            )
        return Diagnostic(filename, end_line, end_col, f"unexpected end of file; expected {_expected(exc)}")
    assert isinstance(exc, UnexpectedToken)
    tok = exc.token
    shown = str(tok.value)
    offset = tok.start_pos or 0
    stack = open_parens(text, offset)
    if tok.type == "RPAR" and not stack:
        return Diagnostic(filename, line, column, "unmatched ')': no construct is open here")
    if len(stack) == 1 and text[stack[0][0] + 1 : offset].strip() == "":
        return Diagnostic(
            filename, line, column, f"unknown construct {shown!r}; expected one of: {', '.join(CONSTRUCT_KEYWORDS)}"
        )
    if not stack and tok.type != "LPAR":
        return Diagnostic(filename, line, column, f"unexpected {shown!r} outside any construct; expected '('")
    where = _construct_at(text, offset)
    ctx = f" in {where}" if where else ""
    return Diagnostic(filename, line, column, f"unexpected {shown!r}{ctx}; expected {_expected(exc)}")


# ---- tree -> AST -------------------------------------------------------------------------


class _BuildError(Exception):
    def __init__(self, line: int, column: int, message: str):
        self.line, self.column, self.message = line, column, message


def _tok_pos(tok: Token) -> ast.Pos:
    return ast.Pos(
        tok.line or 0, tok.column or 0, tok.end_line or 0, tok.end_column or 0, tok.start_pos or 0, tok.end_pos or 0
    )


def _tree_pos(tree: Tree) -> ast.Pos:
    m = tree.meta
    if getattr(m, "empty", True):
        return ast.NOPOS
    return ast.Pos(m.line, m.column, m.end_line, m.end_column, m.start_pos, m.end_pos)


def unescape_string(token_text: str) -> str:
    """The value of a CLIPS string literal (quotes removed, `\\x` -> `x`)."""
    body = token_text[1:-1]
    out, i = [], 0
    while i < len(body):
        if body[i] == "\\" and i + 1 < len(body):
            out.append(body[i + 1])
            i += 2
        else:
            out.append(body[i])
            i += 1
    return "".join(out)


_ATOM_TREES = {
    "symbol",
    "string",
    "integer",
    "float",
    "instance_name",
    "sf_var",
    "mf_var",
    "global_var",
    "sf_wildcard",
    "mf_wildcard",
}


class _Builder:
    def __init__(self, text: str, filename: str):
        self.text, self.filename = text, filename

    def module(self, tree: Tree) -> ast.Module:
        constructs = [self.construct(c) for c in tree.children]
        return ast.Module(self.filename, constructs, text=self.text)

    def _slice(self, pos: ast.Pos) -> str:
        return self.text[pos.start_offset : pos.end_offset]

    # -- constructs
    def construct(self, t: Tree) -> ast.Construct:
        pos = _tree_pos(t)
        node = getattr(self, "c_" + t.data)(t, pos)
        node.text = self._slice(pos)
        return node

    @staticmethod
    def _split_header(children: list) -> tuple[str, str | None, list]:
        name = str(children[0].children[0])
        rest = children[1:]
        comment = None
        if rest and isinstance(rest[0], Tree) and rest[0].data == "comment":
            comment = unescape_string(str(rest[0].children[0]))
            rest = rest[1:]
        return name, comment, rest

    def c_deftemplate(self, t: Tree, pos: ast.Pos) -> ast.TemplateDef:
        name, comment, rest = self._split_header(t.children)
        slots: dict[str, ast.SlotDef] = {}
        for sd in rest:
            kind_tok, name_tree, *attrs = sd.children
            slot_name = str(name_tree.children[0])
            if slot_name in slots:
                tok = name_tree.children[0]
                raise _BuildError(tok.line, tok.column, f"duplicate slot '{slot_name}' in deftemplate {name}")
            attributes = [
                ast.SlotAttribute(str(a.children[0].children[0]), [self.expr(v) for v in a.children[1:]], _tree_pos(a))
                for a in attrs
            ]
            slots[slot_name] = ast.SlotDef(
                slot_name, str(kind_tok) == "multislot", attributes, str(kind_tok), _tree_pos(sd)
            )
        return ast.TemplateDef(name, slots, comment, pos)

    def c_deffacts(self, t: Tree, pos: ast.Pos) -> ast.FactsDef:
        name, comment, rest = self._split_header(t.children)
        return ast.FactsDef(name, [self.expr(s) for s in rest], comment, pos)  # type: ignore[misc]

    def c_defrule(self, t: Tree, pos: ast.Pos) -> ast.RuleDef:
        name, comment, rest = self._split_header(t.children)
        declarations: list[ast.Call] = []
        if rest and isinstance(rest[0], Tree) and rest[0].data == "declare":
            declarations = [self.expr(s) for s in rest[0].children]  # type: ignore[misc]
            rest = rest[1:]
        i = next(i for i, c in enumerate(rest) if isinstance(c, Token) and c.type == "THEN")
        lhs = [self.ce(c) for c in rest[:i]]
        rhs = [self.expr(c) for c in rest[i + 1 :]]
        rule = ast.RuleDef(name, lhs, rhs, comment, pos=pos, declarations=declarations)
        for d in declarations:
            head = d.head
            if head == "salience" and len(d.args) == 1:
                arg = d.args[0]
                rule.salience = arg.value if isinstance(arg, ast.Atom) and arg.kind == "integer" else arg  # type: ignore[assignment]
            elif head == "auto-focus" and len(d.args) == 1 and isinstance(d.args[0], ast.Atom):
                rule.auto_focus = str(d.args[0].value) == "TRUE"
        return rule

    def c_deffunction(self, t: Tree, pos: ast.Pos) -> ast.FunctionDef:
        name, comment, rest = self._split_header(t.children)
        params_tree, *body = rest
        params, wildcard = [], None
        for tok in params_tree.children:
            if tok.type == "MFVAR":
                wildcard = str(tok)[2:]
            else:
                params.append(str(tok)[1:])
        return ast.FunctionDef(name, params, wildcard, [self.expr(b) for b in body], comment, pos)

    def c_defglobal(self, t: Tree, pos: ast.Pos) -> ast.GlobalDef:
        module = None
        rest = t.children
        if rest and isinstance(rest[0], Tree) and rest[0].data == "name":
            module = str(rest[0].children[0])
            rest = rest[1:]
        assigns = [
            ast.GlobalAssignment(str(a.children[0])[2:-1], self.expr(a.children[-1]), _tree_pos(a)) for a in rest
        ]
        return ast.GlobalDef(assigns, module, pos)

    def c_defmodule(self, t: Tree, pos: ast.Pos) -> ast.ModuleDef:
        name, comment, rest = self._split_header(t.children)
        return ast.ModuleDef(name, [self.expr(s) for s in rest], comment, pos)  # type: ignore[misc]

    def c_opaque(self, t: Tree, pos: ast.Pos) -> ast.OpaqueConstruct:
        kind, *items = t.children
        return ast.OpaqueConstruct(str(kind), [self.expr(i) for i in items], pos)

    # -- conditional elements
    def ce(self, t: Tree) -> ast.CE:
        pos = _tree_pos(t)
        d = t.data
        if d == "pattern_ce":
            return self.pattern(t)
        if d == "assigned_ce":
            var, pat = t.children
            p = self.pattern(pat)
            p.address = str(var)[1:]
            p.address_pos = _tok_pos(var)
            p.pos = pos
            return p
        if d == "test_ce":
            return ast.Test(self.expr(t.children[0]), pos)  # type: ignore[arg-type]
        if d == "not_ce":
            return ast.Not(self.ce(t.children[0]), pos)
        cls = {
            "and_ce": ast.And,
            "or_ce": ast.Or,
            "exists_ce": ast.Exists,
            "forall_ce": ast.Forall,
            "logical_ce": ast.Logical,
        }[d]
        return cls([self.ce(c) for c in t.children], pos)

    def pattern(self, t: Tree) -> ast.Pattern:
        name_tree, *rest = t.children
        tok = name_tree.children[0]
        pat = ast.Pattern(str(tok), pos=_tree_pos(t), template_pos=_tok_pos(tok))
        if rest and rest[0].data == "slot_constraint":
            pat.ordered = False
            pat.slots = [
                ast.SlotConstraint(
                    str(sc.children[0].children[0]), [self.field(f) for f in sc.children[1:]], _tree_pos(sc)
                )
                for sc in rest
            ]
        else:
            pat.fields = [self.field(f) for f in rest]
        return pat

    def field(self, t: Tree) -> ast.Field:
        pos = _tree_pos(t)
        if t.data == "sf_wildcard":
            return ast.Wildcard(False, pos)
        if t.data == "mf_wildcard":
            return ast.Wildcard(True, pos)
        alts = []
        for and_c in t.children[0].children:
            terms = []
            for term in and_c.children:
                negated = len(term.children) == 2
                single = term.children[-1]
                terms.append(self.term(single, negated, _tree_pos(term)))
            alts.append(terms)
        return ast.FieldConstraint(alts, _tree_pos(t.children[0]))

    def term(self, t: Tree, negated: bool, pos: ast.Pos) -> ast.Term:
        if t.data == "predicate":
            return ast.Term("predicate", self.expr(t.children[-1]), negated, pos)
        if t.data == "return_value":
            return ast.Term("return_value", self.expr(t.children[-1]), negated, pos)
        atom = self.expr(t)
        assert isinstance(atom, ast.Atom)
        kind = {"variable": "variable", "mf_variable": "mf_variable"}.get(atom.kind, "constant")
        return ast.Term(kind, atom, negated, pos)

    # -- expressions
    def expr(self, t: Tree | Token) -> ast.Expr:
        if isinstance(t, Tree) and t.data == "sexp":
            return ast.Call([self.expr(c) for c in t.children], _tree_pos(t))
        assert isinstance(t, Tree) and t.data in _ATOM_TREES, t
        tok = t.children[0]
        text = str(tok)
        pos = _tok_pos(tok)
        d = t.data
        if d == "symbol":
            return ast.Atom("symbol", text, pos)
        if d == "string":
            return ast.Atom("string", unescape_string(text), pos)
        if d == "integer":
            return ast.Atom("integer", int(text), pos)
        if d == "float":
            return ast.Atom("float", float(text), pos)
        if d == "instance_name":
            return ast.Atom("instance_name", text[1:-1], pos)
        if d == "sf_var":
            return ast.Atom("variable", text[1:], pos)
        if d == "mf_var":
            return ast.Atom("mf_variable", text[2:], pos)
        if d == "global_var":
            return ast.Atom("global", text[2:-1], pos)
        if d == "sf_wildcard":
            return ast.Atom("wildcard", "", pos)
        return ast.Atom("mf_wildcard", "", pos)


# ---- `;@` annotations ---------------------------------------------------------------------


def _attach_annotations(module: ast.Module) -> None:
    """Give each construct the `;@name value` comments on the lines right above it (no construct between)."""
    annotated = [c for c in module.comments if c.text.startswith(";@")]
    if not annotated:
        return
    prev_end = 0
    ci = 0
    for construct in module.constructs:
        start = construct.pos.line
        while ci < len(annotated) and annotated[ci].pos.line < start:
            c = annotated[ci]
            if c.pos.line > prev_end:
                key, _, value = c.text[2:].strip().partition(" ")
                construct.annotations[key] = value.strip()
            ci += 1
        prev_end = construct.pos.end_line
