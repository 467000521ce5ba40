"""The grammar's side of `rules.parser`: lark's LALR parser of `clips.lark` and its tree turned
into the AST. The language's definition and the fallback of the C reader (`rules.native_read`):
`rules.parser` imports this module (and lark) only for text the C reader leaves to the grammar,
so that reading a well-formed file never imports lark.
"""

from __future__ import annotations

import functools
import os
import sys
from pathlib import Path
from typing import Any

from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedInput

from . import ast
from .errors import Diagnostic, RuleSyntaxError
from .parse_errors import diagnostic
from .parser import MAX_CE_NESTING, integer_value
from .scan import unescape_string

_GRAMMAR = Path(__file__).with_name("clips.lark")


@functools.lru_cache(maxsize=1)
def _lark() -> Lark:
    return _fast_positions(_plain_lark())


def _plain_lark() -> Lark:
    """The grammar's parser as lark builds it (positions propagated by lark's own wrapper).

    Building the LALR tables takes ~80 ms, most of a small `kb` command's start-up; lark's own cache
    (`cache=PATH`: the tables pickled, reused only while the grammar text, the options and lark's
    version hash the same) keeps them beside the package's bytecode, in `rules/__pycache__`, which
    only whoever may change the code can write. Not written when Python writes no bytecode
    (`PYTHONDONTWRITEBYTECODE`); a cache that cannot be read or written is rebuilt or skipped."""
    cache: str | bool = False
    if not sys.dont_write_bytecode:
        folder = Path(__file__).with_name("__pycache__")
        if folder.is_dir() or os.access(folder.parent, os.W_OK):
            cache = str(folder / "clips.lark.cache")
            folder.mkdir(exist_ok=True)
    return Lark(
        _GRAMMAR.read_text(),
        parser="lalr",
        lexer="contextual",
        propagate_positions=True,
        maybe_placeholders=False,
        cache=cache,
    )


def _fast_positions(parser: Lark) -> Lark:
    """Replace lark's position propagation (`PropagatePositions`, about half of lark's time on rule
    text: it also records "container" spans for inlined rules) by one that sets each new tree's
    span from its first and last positioned child. For this grammar the two agree (its `?` rules
    and `_` rules hold no tokens of their own); tests/rules/test_parser_positions.py checks the
    whole corpus against `_plain_lark()`. Left as lark built it when lark's internals differ."""
    try:
        from lark.parse_tree_builder import PropagatePositions
        from lark.tree import Meta

        callbacks = parser.parser.parser.parser.callbacks
    except (ImportError, AttributeError):  # pragma: no cover - another lark version
        return parser
    if not all(type(cb) is PropagatePositions for cb in callbacks.values()):  # pragma: no cover
        return parser
    for rule, cb in list(callbacks.items()):
        callbacks[rule] = _positioned(cb.node_builder, Meta)
    return parser


def _positioned(node_builder, meta_class):
    def build(children: list):
        res = node_builder(children)
        if type(res) is Tree and res._meta is None:  # a tree made by this rule (not a child passed up)
            first = _edge(children)
            if first is not None:
                last = _edge(reversed(children))
                m = res._meta = meta_class()
                m.empty = False
                m.line, m.column, m.start_pos = first.line, first.column, first.start_pos
                m.end_line, m.end_column, m.end_pos = last.end_line, last.end_column, last.end_pos
        return res

    return build


def _edge(children: Any) -> Any:
    """The first token, or the span of the first non-empty subtree, of `children` (in the order
    given: reversed for the last); None when there is none."""
    for c in children:
        if type(c) is Token:
            return c
        if type(c) is Tree and c._meta is not None and not c._meta.empty:
            return c._meta
    return None


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
    """The grammar's tree -> AST. `shift` = (offset, line, column) of where the parsed text starts
    in the file when the grammar read one piece of it (`parse_piece`); positions are shifted to the file's."""

    def __init__(self, text: str, filename: str, shift: tuple[int, int, int] = (0, 1, 1)):
        self.text, self.filename = text, filename
        self.warnings: list[Diagnostic] = []
        self._ce_depth = 0
        self._shift = None if shift == (0, 1, 1) else shift

    def _shifted(self, pos: ast.Pos) -> ast.Pos:
        if self._shift is None or pos is ast.NOPOS:
            return pos
        offset, line, column = self._shift
        return ast.Pos(
            pos.line + line - 1,
            pos.column + (column - 1 if pos.line == 1 else 0),
            pos.end_line + line - 1,
            pos.end_column + (column - 1 if pos.end_line == 1 else 0),
            pos.start_offset + offset,
            pos.end_offset + offset,
        )

    def _tok_pos(self, tok: Token) -> ast.Pos:
        return self._shifted(_tok_pos(tok))

    def _tree_pos(self, tree: Tree) -> ast.Pos:
        return self._shifted(_tree_pos(tree))

    def module(self, tree: Tree) -> ast.Module:
        constructs = [self.construct(c) for c in tree.children]
        return ast.Module(self.filename, constructs, text=self.text)

    def _slice(self, pos: ast.Pos) -> str:
        return self.text[pos.start_offset : pos.end_offset]

    # -- constructs
    def construct(self, t: Tree) -> ast.Construct:
        pos = self._tree_pos(t)
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
                at = self._tok_pos(name_tree.children[0])
                raise _BuildError(at.line, at.column, f"duplicate slot '{slot_name}' in deftemplate {name}")
            attributes = [
                ast.SlotAttribute(
                    str(a.children[0].children[0]), [self.expr(v) for v in a.children[1:]], self._tree_pos(a)
                )
                for a in attrs
            ]
            slots[slot_name] = ast.SlotDef(
                slot_name, str(kind_tok) in ("multislot", "multifield"), attributes, str(kind_tok), self._tree_pos(sd)
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
            ast.GlobalAssignment(str(a.children[0])[2:-1], self.expr(a.children[-1]), self._tree_pos(a)) for a in rest
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
        pos = self._tree_pos(t)
        d = t.data
        if d not in ("pattern_ce", "assigned_ce", "test_ce"):
            self._ce_depth += 1
            try:
                if self._ce_depth > MAX_CE_NESTING:
                    raise _BuildError(
                        pos.line, pos.column, f"conditional elements nested deeper than {MAX_CE_NESTING} levels"
                    )
                return self._nested_ce(t, pos, d)
            finally:
                self._ce_depth -= 1
        return self._nested_ce(t, pos, d)

    def _nested_ce(self, t: Tree, pos: ast.Pos, d: str) -> ast.CE:
        if d == "pattern_ce":
            return self.pattern(t)
        if d == "assigned_ce":
            var, _, pat = t.children
            p = self.pattern(pat)
            p.address = str(var)[1:]
            p.address_pos = self._tok_pos(var)
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
        pat = ast.Pattern(str(tok), pos=self._tree_pos(t), template_pos=self._tok_pos(tok))
        if rest and rest[0].data == "slot_constraint":
            pat.ordered = False
            pat.slots = [
                ast.SlotConstraint(
                    str(sc.children[0].children[0]), [self.field(f) for f in sc.children[1:]], self._tree_pos(sc)
                )
                for sc in rest
            ]
        else:
            pat.fields = [self.field(f) for f in rest]
        return pat

    def field(self, t: Tree) -> ast.Field:
        pos = self._tree_pos(t)
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
                terms.append(self.term(single, negated, self._tree_pos(term)))
            alts.append(terms)
        return ast.FieldConstraint(alts, self._tree_pos(t.children[0]))

    def term(self, t: Tree, negated: bool, pos: ast.Pos) -> ast.Term:
        if t.data == "predicate":
            return ast.Term("predicate", self.expr(t.children[-1]), negated, pos)
        if t.data == "return_value":
            return ast.Term("return_value", self.expr(t.children[-1]), negated, pos)
        atom = self.atom(t)
        kind = {"variable": "variable", "mf_variable": "mf_variable"}.get(atom.kind, "constant")
        return ast.Term(kind, atom, negated, pos)

    # -- expressions
    def expr(self, t: Tree | Token) -> ast.Expr:
        """Iterative, so that nesting depth costs no Python stack."""
        if not (isinstance(t, Tree) and t.data == "sexp"):
            return self.atom(t)
        stack: list[tuple[Tree, object, list]] = [(t, iter(t.children), [])]
        while True:
            node, children, items = stack[-1]
            for child in children:  # type: ignore[attr-defined]
                if isinstance(child, Tree) and child.data == "sexp":
                    stack.append((child, iter(child.children), []))
                    break
                items.append(self.atom(child))
            else:
                stack.pop()
                call = ast.Call(items, self._tree_pos(node))
                if not stack:
                    return call
                stack[-1][2].append(call)

    def atom(self, t: Tree | Token) -> ast.Atom:
        assert isinstance(t, Tree) and t.data in _ATOM_TREES, t
        tok = t.children[0]
        text = str(tok)
        pos = self._tok_pos(tok)
        d = t.data
        if d == "symbol":
            return ast.Atom("symbol", text, pos)
        if d == "string":
            return ast.Atom("string", unescape_string(text), pos)
        if d == "integer":
            value, overflow = integer_value(text)
            if overflow:
                shown = text if len(text) <= 30 else f"{text[:12]}...{text[-6:]} ({len(text)} characters)"
                self.warnings.append(
                    Diagnostic(
                        self.filename,
                        pos.line,
                        pos.column,
                        f"integer {shown} is outside CLIPS's 64-bit range: CLIPS warns '[SCANNER1] Over or "
                        f"underflow of long long integer' and reads it as {value}",
                        "warning",
                    )
                )
            return ast.Atom("integer", value, pos)
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


def parse_by_grammar(text: str, lark_text: str, filename: str) -> tuple[ast.Module, list[Diagnostic]]:
    """The grammar's parse of `lark_text` (`text` with its data deffacts blanked) turned into the AST,
    and the warnings found while reading (integers outside 64 bits). Raises RuleSyntaxError."""
    builder = _Builder(text, filename)
    parser = _lark()
    try:
        tree = parser.parse(lark_text)
    except UnexpectedInput as exc:
        raise RuleSyntaxError([diagnostic(exc, text, filename, parser)]) from None
    try:
        return builder.module(tree), builder.warnings
    except _BuildError as exc:
        raise RuleSyntaxError([Diagnostic(filename, exc.line, exc.column, exc.message)]) from None


def parse_piece(
    text: str, lark_text: str, start: int, end: int, filename: str, lines
) -> tuple[list[ast.Construct], list[Diagnostic], Diagnostic | None]:
    """The grammar's reading of `lark_text[start:end]` alone (one construct, or the rest of the text),
    with positions, warnings and errors located in the file (`lines`: `rules.scan.Lines` of `text`).
    `start` must be where a construct starts (nothing open there), so that the outcome is the one
    the grammar gives on the whole text from there. Returns (constructs, warnings, the tree
    builder's error or None). Raises RuleSyntaxError (the syntax error, located in the file)."""
    line, column = lines.at(start)
    builder = _Builder(text, filename, (start, line, column))
    parser = _lark()
    try:
        tree = parser.parse(lark_text[start:end])
    except UnexpectedInput as exc:
        _shift_error(exc, start, line, column)
        raise RuleSyntaxError([diagnostic(exc, text, filename, parser, start)]) from None
    try:
        return builder.module(tree).constructs, builder.warnings, None
    except _BuildError as exc:
        return [], builder.warnings, Diagnostic(filename, exc.line, exc.column, exc.message)


def _shift_error(exc: UnexpectedInput, offset: int, line: int, column: int) -> None:
    """Move the position of lark's exception on a piece of text starting at (offset, line, column) to the file's."""

    def col(at_line: int, at_column: int) -> int:
        return at_column + column - 1 if at_line == 1 else at_column

    token = getattr(exc, "token", None)
    if isinstance(token, Token) and token.type != "$END" and token.line is not None:
        token.column, token.end_column = col(token.line, token.column), col(token.end_line, token.end_column)
        token.line, token.end_line = token.line + line - 1, token.end_line + line - 1
        token.start_pos, token.end_pos = token.start_pos + offset, token.end_pos + offset
    if getattr(exc, "line", -1) > 0:
        exc.column = col(exc.line, exc.column)
        exc.line = exc.line + line - 1
    if getattr(exc, "pos_in_stream", -1) is not None and getattr(exc, "pos_in_stream", -1) >= 0:
        exc.pos_in_stream += offset
