"""The backward prover's start-up paths (issue 18, speed): plain deffacts read without CLIPS must give
exactly the facts CLIPS's reset gives, and the rule graph's strongly connected components (which
relations are tabled) must be those networkx finds."""

from __future__ import annotations

import random
from pathlib import Path

import networkx as nx
import pytest

import rules
from chaining.backward import Session
from chaining.backward.evaluator import ClipsEvaluator
from chaining.backward.rulebase import strongly_connected

ROOT = Path(__file__).resolve().parents[3]
FILES = sorted((ROOT / "knowledge_bases").glob("*.clp")) + sorted(
    (ROOT / "tests" / "chaining" / "programs").glob("*.clp")
)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_plain_deffacts_are_the_facts_clips_reads(path: Path) -> None:
    try:
        kb = rules.load_knowledge_base(path)
    except rules.RuleError:
        pytest.skip("not a loadable knowledge base on its own")
    fast = ClipsEvaluator(kb).plain_base_facts()
    if fast is None:
        return  # templates, globals or modules: CLIPS reads the facts
    assert fast == ClipsEvaluator(kb).base_facts([])


def test_plain_deffacts_keep_types_order_and_drop_duplicates(tmp_path: Path) -> None:
    f = tmp_path / "d.clp"
    f.write_text('(deffacts a (p 1 2.5 "s t" sym) (q) (p 1 2.5 "s t" sym))\n(deffacts b (r -3 "x\\"y"))\n')
    kb = rules.load_knowledge_base(f)
    fast = ClipsEvaluator(kb).plain_base_facts()
    assert fast is not None and fast == ClipsEvaluator(kb).base_facts([])
    assert [x.id for x, _ in fast] == [1, 2, 3]
    s = Session(kb)
    assert s.ev._env is None  # nothing to evaluate: CLIPS never started
    assert [a.bindings for a in s.prove_sync('(p ?a ?b "s t" ?c)').answers] == [{"a": 1, "b": 2.5, "c": "sym"}]


def test_templates_still_go_through_clips(tmp_path: Path) -> None:
    f = tmp_path / "t.clp"
    f.write_text("(deftemplate t (slot a (default 7)))\n(deffacts d (t))\n")
    kb = rules.load_knowledge_base(f)
    assert ClipsEvaluator(kb).plain_base_facts() is None
    assert Session(kb).prove_sync("(t (a ?x))").answers[0].bindings == {"x": 7}


def test_strongly_connected_components_match_networkx() -> None:
    for seed in range(300):
        rng = random.Random(seed)
        n = rng.randint(1, 15)
        g = {str(i): {str(rng.randrange(n + 3)) for _ in range(rng.randint(0, 3))} for i in range(n)}
        ref = nx.DiGraph()
        ref.add_nodes_from(g)
        ref.add_edges_from((a, b) for a in g for b in g[a])
        ours = sorted(sorted(c) for c in strongly_connected(g))
        assert ours == sorted(sorted(c) for c in nx.strongly_connected_components(ref)), seed


def test_tables_keep_a_symbol_and_a_string_of_the_same_text_apart(tmp_path: Path) -> None:
    """Tabled answers of symbols are keyed by their values (a table key shortcut): the string "a",
    the integer 1 and the float 1.0 stay answers of their own, as in CLIPS."""
    f = tmp_path / "t.clp"
    f.write_text(
        '(deffacts d (e a b) (e "a" b) (e 1 b) (e 1.0 b) (e b a))\n'
        "(defrule r1 (e ?x ?y) => (assert (p ?x ?y)))\n"
        "(defrule r2 (e ?x ?z) (p ?z ?y) => (assert (p ?x ?y)))\n"
    )
    s = Session(rules.load_knowledge_base(f))
    assert "p" in s.tabled
    got = sorted(repr((type(a.bindings["x"]).__name__, a.bindings["x"])) for a in s.prove_sync("(p ?x a)").answers)
    assert got == sorted(
        repr(x) for x in [("Symbol", "a"), ("Symbol", "b"), ("String", "a"), ("int", 1), ("float", 1.0)]
    )


def test_cached_grammar_tables_parse_as_freshly_built_ones(tmp_path: Path) -> None:
    """`kb` start-up reuses lark's pickled LALR tables (`rules.parser._plain_lark`, beside the
    bytecode): a parser loaded from that cache gives the trees of one built without it, and no cache
    is written when Python writes no bytecode."""
    import subprocess
    import sys

    repo = Path(__file__).resolve().parents[3]
    program = (
        "import sys, pickle\n"
        "from rules import parser\n"
        "parser._plain_lark()\n"
        "out = [repr(parser.parse(open(f).read(), f)) for f in sys.argv[1:]]\n"
        "sys.stdout.buffer.write(pickle.dumps(out))\n"
    )
    kbs = [str(f) for f in sorted((repo / "knowledge_bases").glob("*.clp"))]
    cache = repo / "rules" / "__pycache__" / "clips.lark.cache"
    env = {k: v for k, v in __import__("os").environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    runs = [
        subprocess.run([sys.executable, "-c", program, *kbs], cwd=repo, env=e, capture_output=True, timeout=120)
        for e in ({**env, "PYTHONDONTWRITEBYTECODE": "1"}, env, env)  # built; built and cached; from the cache
    ]
    assert all(r.returncode == 0 for r in runs), [r.stderr.decode()[-500:] for r in runs]
    assert runs[0].stdout == runs[1].stdout == runs[2].stdout and len(runs[0].stdout) > 1000
    assert cache.is_file() and cache.read_bytes()[:64].strip()  # the cache: a hash line, then the tables


def test_kb_ask_json_imports_only_the_prover(tmp_path: Path) -> None:
    """`workbench kb ask FILE GOAL --json` (the plain command line: `cli.kb_ask_run.fast_main`) on a knowledge base
    without questions loads the rule language and the prover only: no event loop (asyncio), no rich,
    no typer/click, pydantic, SQLAlchemy, torch or numpy; and it prints every answer."""
    import json
    import subprocess
    import sys

    f = tmp_path / "cross.clp"
    f.write_text("(deffacts d (a x1) (a x2) (b y1) (b y2) (b y3))\n(defrule p (a ?x) (b ?y) => (assert (p ?x ?y)))\n")
    heavy = ["asyncio", "rich", "typer", "click", "pydantic", "sqlalchemy", "torch", "numpy", "clips", "networkx"]
    code = (
        "import sys\n"
        f"sys.argv = ['workbench', 'kb', 'ask', {str(f)!r}, '(p ?x ?y)', '--all', '--json']\n"
        "import cli\n"
        "try:\n"
        "    cli.main()\n"
        "    rc = 0\n"
        "except SystemExit as exc:\n"
        "    rc = exc.code\n"
        f"sys.stderr.write(repr(sorted(m for m in {heavy!r} if m in sys.modules)) + '\\n')\n"
        "sys.exit(rc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stderr.strip().splitlines()[-1] == "[]"
    doc = json.loads(out.stdout)
    assert doc["count"] == 6 and [a["fact"] for a in doc["answers"]][:2] == ["(p x1 y1)", "(p x1 y2)"]
