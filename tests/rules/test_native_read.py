"""The C reader of rule text (`rules.native_read`) against the grammar it stands in for (lark and
`rules.parser`'s tree builder, with `rules.scan`'s regular expressions): the same AST (every
node, position, construct text, comment and warning), the same `kb check` diagnostics and the
same syntax errors, on every rule file in the repository, the benchmark programs and seeded
mutations of rule text; the grammar is taken for anything the reader does not read."""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path

import pytest

import rules
from rules import native_read, parser, scan

pytestmark = pytest.mark.skipif(not native_read.AVAILABLE, reason=f"C reader: {native_read.UNAVAILABLE}")

ROOT = Path(__file__).resolve().parents[2]
RULE_FILES = sorted(p for p in ROOT.rglob("*.clp") if ".venv" not in p.parts and "node_modules" not in p.parts)


def _flat(node) -> list:
    """Every value reachable from `node`, in order, iteratively (files nest 1,000 levels deep),
    fields excluded from equality included (positions, construct text, annotations, sets)."""
    out, stack = [], [node]
    while stack:
        o = stack.pop()
        if dataclasses.is_dataclass(o) and not isinstance(o, type):
            out.append(type(o).__name__)
            stack.extend(getattr(o, f.name) for f in reversed(dataclasses.fields(o)))
        elif isinstance(o, (list, tuple, scan.FactData)):
            items = list(o)
            out.append(("list", len(items)))
            stack.extend(reversed(items))
        elif isinstance(o, dict):
            out.append(("dict", tuple(o)))
            stack.extend(reversed(list(o.values())))
        elif isinstance(o, (set, frozenset)):
            out.append(("set", tuple(sorted(o))))
        else:
            out.append((type(o).__name__, o))
    return out


def _outcome(text: str) -> tuple:
    """What `rules.parse` and `kb check` make of the text: the whole AST flattened, or the error."""
    try:
        module = rules.parse(text, "f.clp")
    except rules.RuleSyntaxError as exc:
        return ("error", str(exc), [str(d) for d in exc.diagnostics])
    tree = _flat(module.constructs) + _flat(module.comments) + [str(d) for d in module.diagnostics]
    return ("ok", tree, [str(d) for d in rules.check_sources([("f.clp", text)], warnings=True)])


def _both(text: str, monkeypatch) -> tuple[tuple, tuple, bool]:
    """(outcome with the C reader, outcome by the grammar alone, whether the C reader read it)."""
    lark_text = None
    try:
        lark_text = scan.prescan(text)[0]
    except scan.ScanError:
        pass
    read = bool(lark_text) and native_read.read(lark_text) is not None
    with_c = _outcome(text)
    monkeypatch.setattr(native_read, "module", None)
    monkeypatch.setattr(scan, "_reader", None)
    by_grammar = _outcome(text)
    monkeypatch.undo()
    return with_c, by_grammar, read


@pytest.mark.parametrize("path", RULE_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_rule_file_reads_the_same(path: Path, monkeypatch):
    text = path.read_text(encoding="utf-8", errors="replace")
    with_c, by_grammar, _ = _both(text, monkeypatch)
    assert with_c == by_grammar


def test_the_reader_reads_most_files(monkeypatch):
    """Not a reader that gives up on everything: the shipped rule files and the wellformed corpus."""
    shipped = [p for p in RULE_FILES if "knowledge_bases" in p.parts or "wellformed" in p.parts]
    read = [p for p in shipped if native_read.read(scan.prescan(p.read_text())[0]) is not None]
    assert len(shipped) > 20 and read == shipped


def test_the_benchmark_programs_are_read_in_c(monkeypatch):
    from cli.benchmarks._rules_frontend import manners_data, waltz_data

    for name in ("manners.clp", "waltz.clp"):
        text = (ROOT / "knowledge_bases" / "bench" / name).read_text()
        with_c, by_grammar, read = _both(text, monkeypatch)
        assert read and with_c == by_grammar
    for data in (manners_data(8), waltz_data(1)):
        with_c, by_grammar, _ = _both(data, monkeypatch)
        assert with_c == by_grammar


_BASES = [
    (ROOT / "knowledge_bases" / "bench" / "manners.clp").read_text(),
    (ROOT / "tests" / "rules" / "wellformed" / "rule_lhs.clp").read_text(),
    (ROOT / "tests" / "rules" / "wellformed" / "rule_rhs.clp").read_text(),
    (ROOT / "tests" / "rules" / "wellformed" / "templates_facts.clp").read_text(),
    (ROOT / "tests" / "rules" / "wellformed" / "opaque.clp").read_text(),
    '(defglobal ?*x* = 1 ?*y* = (+ 1 2)) (defmodule M (export ?ALL)) (deffunction f "c" (?a $?b) (+ ?a 1))\n'
    '(defrule r "c" (declare (salience ?*x*) (auto-focus TRUE)) (logical (a ?x&:(> ?x 1)|=(+ 1 2)))\n'
    "  ?f <- (b (s ~red $?)) (or (c) (and (d) (not (e)))) (exists (g)) (forall (h ?y) (i ?y)) (test (> 1 0))\n"
    '  => (bind ?z [inst]) (assert (k 1.5e3 -7 "s\\"q" =(+ 1 2))) (retract ?f))',
]
# Characters and words that matter to the reader: delimiters, strings and escapes, comments,
# connectives, variable and wildcard starts, numbers, keywords in the wrong places, whitespace
# CLIPS reads and whitespace it does not, characters outside ASCII, integers near 64 bits.
_ALPHABET = list('()"\\; \t\n\r\f\v~&|:=<$?*[]x1.e+-') + [
    "=>",
    "<-",
    "?x",
    "$?",
    "?*g*",
    "not ",
    "test ",
    "declare ",
    "(or ",
    "(logical ",
    "deffacts ",
    "slot ",
    "multislot ",
    "é",
    "\x00",
    "9" * 19,
    "1e",
    ";c\n",
    "(defrule ",
    "(deftemplate t ",
]


@pytest.mark.parametrize("seed", range(240))
def test_mutated_rule_text_reads_the_same(seed: int, monkeypatch):
    rng = random.Random(seed)
    text = _BASES[seed % len(_BASES)]
    for _ in range(rng.randint(1, 4)):
        at = rng.randrange(len(text) + 1)
        if rng.random() < 0.6:
            text = text[:at] + rng.choice(_ALPHABET) + text[at:]
        else:
            text = text[:at] + text[at + rng.randint(1, 4) :]
    with_c, by_grammar, _ = _both(text, monkeypatch)
    assert with_c == by_grammar


# Files of many constructs, so that the C reader stops in the middle and lark reads one construct
# alone (positions shifted to the file's) before the C reader goes on: a construct it leaves to
# lark (a non-ASCII word, a 64-bit overflow), duplicate slots before and after.
_MULTI = "\n".join(_BASES) + (
    "\n(deftemplate v (slot a) (slot b))\n(defrule é (v (a 1)) => )\n(deftemplate u (slot x) (slot x))\n"
    "(defrule q (a) => (x 99999999999999999999))\n(deftemplate w (slot y) (slot y))\n(defrule z (a) => )"
)
_MULTI_ALPHABET = _ALPHABET + [")", "(", "é", "\r", ";x\r(", "(defrule a (a) =>)", "(deftemplate v (slot x) (slot x))"]


@pytest.mark.parametrize("seed", range(160))
def test_mutated_files_of_many_constructs_read_the_same_construct_by_construct(seed: int, monkeypatch):
    """The grammar reading only the constructs the C reader leaves gives what it gives on the whole
    file: the same AST and warnings, the same first error with the same located message."""
    rng = random.Random(1000 + seed)
    text = _MULTI
    for _ in range(rng.randint(1, 5)):
        at = rng.randrange(len(text) + 1)
        if rng.random() < 0.6:
            text = text[:at] + rng.choice(_MULTI_ALPHABET) + text[at:]
        else:
            text = text[:at] + text[at + rng.randint(1, 4) :]
    with_c, by_grammar, _ = _both(text, monkeypatch)
    assert with_c == by_grammar


@pytest.mark.parametrize(
    "text",
    [
        "(defrule a (p) =>)\n(defrule b (p) => ) )",  # a stray ')' after what the reader read
        "(defrule a (p) =>)\n  x (defrule b (p) =>)",  # a word between constructs
        "(defrule a (p) =>)\n(defrule b (p) =>",  # never closed
        "(defrule a (p) =>)\n(defrule b (p)\n(defrule c (q) =>)",  # unclosed before the next construct
        "(deftemplate t (slot a) (slot a))\n(defrule b (p) => (x ?))) ",  # the syntax error wins
        "(defrule é (p) =>)\n(deftemplate t (slot a) (slot a))\n(deftemplate u (slot b) (slot b))",
        "(deftemplate t (slot a) (slot a) (slot 1))",  # a duplicate, then a syntax error in it
        "(defrule a (p) => ; c\r(x)\n)\n(defrule b (p) =>) )",  # a comment ends at CR
        "(defrule a (p) =>)\n(defrule b (p é) =>)\n(defrule c (p ?1) =>)",
        "(defrule a (p) =>) (defrulex =>)",
        "(deffacts d (a 1) ; c\r(b 2))\n(defrule r (a) => (x ))) ",  # data deffacts, then a stray ')'
    ],
)
def test_located_errors_are_the_whole_files_when_lark_reads_one_construct(text: str, monkeypatch):
    with_c, by_grammar, _ = _both(text, monkeypatch)
    assert with_c == by_grammar


@pytest.mark.parametrize(
    "text",
    [
        '(defrule r (a) => (printout t "x")',  # unclosed
        "(defrule r (a ?x&) => )",  # a dangling connective
        "(deftemplate t (slot a) (slot a))",  # a duplicate slot (the tree builder's error)
        "(defrule r (a 99999999999999999999) =>)",  # outside 64 bits: the grammar's warning
        "(defrule r " + "(not " * 101 + "(a)" + ")" * 101 + " =>)",  # CE nesting past the limit
        '(deffacts d (a "unterminated))',
        "(defrule r (a) => (x ?)) (bogus)",
    ],
)
def test_text_the_reader_leaves_to_the_grammar_gets_the_grammars_outcome(text: str, monkeypatch):
    assert native_read.read(scan.prescan(text)[0]) is None
    with_c, by_grammar, read = _both(text, monkeypatch)
    assert not read and with_c == by_grammar


def test_a_syntax_error_keeps_its_located_message():
    with pytest.raises(rules.RuleSyntaxError) as caught:
        rules.parse('(defrule r\n  (a ?x&)\n  => (printout t "x" crlf))', "bad.clp")
    (d,) = caught.value.diagnostics
    assert (d.file, d.line, d.column) == ("bad.clp", 2, 9)


def test_the_split_and_comments_in_c_agree_with_the_regular_expressions():
    for path in RULE_FILES:
        text = path.read_text(encoding="utf-8", errors="replace")
        try:
            expected_data: list = []
            scan._split(text, expected_data)
        except scan.ScanError as exc:
            with pytest.raises(scan.ScanError) as caught:
                scan._split_native(text, [])
            assert caught.value.offset == exc.offset
            continue
        data: list = []
        scan._split_native(text, data)
        assert [(s, e) for s, e, _ in data] == [(s, e) for s, e, _ in expected_data], path
        lines = scan.Lines(text)
        assert native_read.module.comments(text) == [c for c in _comments_by_regex(text, lines)] and _flat(
            native_read.module.comments(text)
        ) == _flat(_comments_by_regex(text, lines)), path


def _comments_by_regex(text: str, lines: scan.Lines) -> list:
    reader, scan._reader = scan._reader, None
    try:
        return scan.comments(text, lines)
    finally:
        scan._reader = reader


def test_a_reader_built_from_another_source_is_not_used(monkeypatch):
    monkeypatch.setattr(native_read, "_digest", lambda: "0" * 16)
    module, why = native_read._load()
    assert module is None and "another version of native_read" in why


def test_without_the_reader_the_grammar_parses(monkeypatch):
    monkeypatch.setattr(native_read, "module", None)
    monkeypatch.setattr(scan, "_reader", None)
    module = rules.parse((ROOT / "knowledge_bases" / "bench" / "manners.clp").read_text())
    assert [c.name for c in module.constructs if isinstance(c, rules.RuleDef)][0] == "assign-first-seat"
    assert parser._lark.cache_info().currsize == 1


@pytest.mark.parametrize(
    "text",
    [
        _BASES[3],  # templates with attributes: a slot's name once leaked a reference per slot
        _BASES[5],
        "(deftemplate person (slot name) (slot name))",  # left to the grammar halfway through
        _BASES[1][: len(_BASES[1]) // 2],  # cut: the reader gives up at the end
    ],
)
def test_reading_leaks_nothing(text: str):
    """Objects the reader makes are all released: the interpreter's count of allocated blocks
    does not grow with the number of reads (it grew by one block per slot name before)."""
    import gc
    import sys

    lark_text = scan.prescan(text)[0]
    for _ in range(20):
        native_read.read(lark_text)
    gc.collect()
    before = sys.getallocatedblocks()
    for _ in range(400):
        native_read.read(lark_text)
    gc.collect()
    assert sys.getallocatedblocks() - before < 100


_WORDS = [
    "1", "-1", "+1", "007", "1.", ".5", "-.5e-3", "1e5", "1E+5", "1e", "5e+", "+.", "1..2", "0x1F", "1.5.",
    "[]", "[a]", "[a", "a]", "?", "?x", "?*", "?**", "?***", "?*x*", "?*x", "$?", "$?x", "$?*x", "$x", "$", "?1",
    "=>", "=>x", "<-", "<-x", "<", "<<x", "a<b", ":", "=", "==", ":x", "x:", "test", "not", "declare", "slot",
    "deffacts", "defclass", "TRUE", "nil", "a\\b", "é", "\\",
]  # fmt: skip
_PLACES = [
    "(defrule r (p {w}) => (x {w}))",  # a pattern's field and an expression's atom
    "(defrule r (p (s {w})) => (assert (q (s {w}))))",  # a slot constraint and a slot value
    "(defrule r (p ~{w}&{w}|{w}) =>)",  # terms of a constraint
    "(defrule r ({w} a) =>)",  # a relation name
    "(defrule r ?f <- ({w}) => (retract ?f))",
    "(defrule {w} =>)",  # a construct name
    "(deftemplate t (slot {w} (default {w})))",  # a slot name and an attribute value
    "(deffunction f (?a {w}) {w})",  # a parameter and a body atom
    "(defglobal ?*g* = {w} {w})",
    "(deffacts d (p {w}) ({w}))",  # data: the scanner's regular expressions or the grammar
    "(defmodule {w} (export ?ALL))",
    "(defclass C (is-a USER) ({w}))",
]


@pytest.mark.parametrize("place", _PLACES)
def test_words_read_as_the_grammars_lexer_reads_them_in_every_place(place: str, monkeypatch):
    """Each tricky word (numbers, variables, wildcards, instance names, arrows, keywords, `<`) in
    each place of the grammar: the reader and the grammar agree (or the reader leaves it)."""
    for word in _WORDS:
        text = place.replace("{w}", word)
        with_c, by_grammar, _ = _both(text, monkeypatch)
        assert with_c == by_grammar, text
