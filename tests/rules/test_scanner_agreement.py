"""Our tokenizer agrees with CLIPS's scanner (scanner.c): each text below, read as the fields of
an ordered fact, gives the same values with the same types as CLIPS's `explode$` of it (which
runs the same scanner). Covers where symbols end (`<`, `&|~;"()`, control characters) and
where they do not (`?`, `$`, `>`, `:`, `[`, non-ASCII characters, Unicode spaces)."""

from __future__ import annotations

import clips
import pytest

import rules
from rules import ast

TEXTS = [
    "a<b",
    "1<2",
    "<<a",
    "<-x",
    "=>x",
    "a?b",
    "a$b",
    "$x",
    "[a]b",
    "[a]",
    "[]",
    "1.5<",
    "+<",
    "x:y",
    "a>b",
    "1e5x",
    "1e",
    "1.",
    "-x",
    "é<a",
    "a\u00a0b",
    "a\\b",
    "a<=b c<-d",
]
_TYPES = {"Symbol": "symbol", "int": "integer", "float": "float", "InstanceName": "instance_name", "String": "string"}


def _clips_tokens(text: str) -> list[tuple[str, object]]:
    env = clips.Environment()
    quoted = '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return [
        (_TYPES[type(v).__name__], v if not isinstance(v, str) else str(v)) for v in env.eval(f"(explode$ {quoted})")
    ]


def _our_tokens(text: str) -> list[tuple[str, object]]:
    module = rules.parse(f"(deffacts d (f {text}))\n")
    (fact,) = module.constructs[0].facts
    out = []
    for a in fact.args:
        assert isinstance(a, ast.Atom)
        out.append((a.kind, a.value))
    return out


@pytest.mark.parametrize("text", TEXTS)
def test_tokens_agree_with_clips_scanner(text: str) -> None:
    assert _our_tokens(text) == _clips_tokens(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # reviewer finding 1: the INTEGER slot gets two values, not one wrong-typed symbol
        ("(deftemplate t (slot x (type INTEGER)))\n(deffacts d (t (x 1<2)))\n", "needs exactly one value, got 2"),
        ("(defrule r (f ?1) =>)\n", "[SCANNER2] the character '1'"),
        ("(deffacts d (f a\x07b))\n", "unprintable character"),
        ("(deftemplate t (slot x))\n(deffacts d (MAIN::t (x 1)))\n", "[MODULDEF1]"),
        ("(deffacts d (f a b))\n(deftemplate f (slot x))\n", "[CSTRCPSR4]"),
        ("(deftemplate t (multislot m (cardinality 2 3)))\n(deffacts d (t (m a)))\n", "[CSTRNCHK1]"),
        ("(deftemplate t (slot x (allowed-values 1)))\n(deffacts d (t (x 1.0)))\n", "not an allowed value"),
    ],
)
def test_refusal_messages(tmp_path, text: str, expected: str) -> None:
    path = tmp_path / "case.clp"
    path.write_text(text, encoding="utf-8")
    env = clips.Environment()
    with pytest.raises(clips.CLIPSError):
        env.load(str(path))  # the oracle refuses it
    diagnostics = rules.check_files([path], allow_unsafe=True)
    assert diagnostics and expected in diagnostics[0].message, [str(d) for d in diagnostics]
    assert diagnostics[0].line >= 1 and diagnostics[0].column >= 1


def test_comment_ends_at_carriage_return(tmp_path) -> None:
    """CLIPS ends a `;` comment at CR as at LF: what follows a lone CR is read (and `kb run`'s
    construct splitter, `split_constructs`, reads it too)."""
    from chaining.forward.constructs import split_constructs

    text = "(deffacts d (f a)) ; comment\r(deffacts e (g b))\n"
    path = tmp_path / "cr.clp"
    path.write_bytes(text.encode())
    env = clips.Environment()
    env.load(str(path))
    env.reset()
    assert sorted(str(f) for f in env.facts()) == ["(f a)", "(g b)"]
    kb = rules.load_knowledge_base([path])
    assert kb.summary()["deffacts"] == ["d", "e"]
    assert [c.text for c in split_constructs(text, "cr.clp")] == ["(deffacts d (f a))", "(deffacts e (g b))"]
