"""Decision tables (.csv/.xlsx) as part of a knowledge base: generated rules run on real CLIPS and
agree with the same rules written by hand; every bad cell is located as file:ROW:COL."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import clips
import pytest
from typer.testing import CliRunner

import rules
from chaining.forward import EngineConfig, ForwardEngine
from cli.app import app
from rules import Fact

HERE = Path(__file__).parent / "decision_tables"
HEADER = (
    "name,salience,if applicant.income,if applicant.region,if applicant.score,"
    "then decision.action,then decision.reason,then decision.limit\n"
)

APPLICANTS = [
    {"income": 500, "region": "south", "score": 900},
    {"income": 5000, "region": "north", "score": 700},
    {"income": 5000, "region": "east", "score": 300},
    {"income": 5000, "region": "west", "score": 650},
    {"income": 1000, "region": "east", "score": 600},
]

HAND_WRITTEN = """
(defrule reject-low-income (declare (salience 10))
  (applicant (income ?i&:(< ?i 1000))) => (assert (decision (action reject) (reason "income below 1000"))))
(defrule approve-north
  (applicant (income ?i&:(>= ?i 1000)) (region north|east) (score ?s&:(>= ?s 600)))
  => (assert (decision (action approve) (reason "good score in the north or east") (limit 5000.0))))
(defrule review-rest
  (applicant (income ?i&:(>= ?i 1000)) (score ?s&:(< ?s 600)))
  => (assert (decision (action review) (reason "score below 600"))))
"""


def _decisions_by_clips(text: str, applicant: dict) -> list[tuple]:
    env = clips.Environment()
    for construct in _constructs(text):
        env.build(construct)
    env.reset()
    env.assert_string(
        f"(applicant (income {applicant['income']}) (region {applicant['region']}) (score {applicant['score']}))"
    )
    env.run()
    out = []
    for f in env.facts():
        if f.template.name == "decision":
            out.append((str(f["action"]), str(f["reason"]), float(f["limit"]) if f["limit"] != "nil" else None))
    return sorted(out, key=repr)


def _constructs(text: str) -> list[str]:
    """Split CLIPS text into top-level constructs (comments dropped)."""
    out, depth, cur, in_str = [], 0, [], False
    for line in text.splitlines():
        line = line.split(";")[0] if '"' not in line else line
        for ch in line + "\n":
            if ch == '"':
                in_str = not in_str
            if not in_str and ch == "(":
                depth += 1
            if depth:
                cur.append(ch)
            if not in_str and ch == ")":
                depth -= 1
                if depth == 0:
                    out.append("".join(cur))
                    cur = []
    return out


def _ours(kb: rules.KnowledgeBase, applicant: dict) -> list[tuple]:
    engine = ForwardEngine.from_knowledge_base(kb, config=EngineConfig(workers=1))
    try:
        result = engine.evaluate([Fact("applicant", applicant)])
    finally:
        engine.close()
    out = []
    for f in result.facts:
        if f.template == "decision":
            limit = f.slots.get("limit")
            out.append((str(f.slots["action"]), str(f.slots["reason"]), None if limit in (None, "nil") else limit))
    return sorted(out, key=repr)


@pytest.mark.parametrize("applicant", APPLICANTS, ids=lambda a: f"{a['income']}-{a['region']}-{a['score']}")
def test_table_rules_equal_hand_written_rules_on_clips(applicant):
    kb = rules.load_knowledge_base([HERE / "loan.clp", HERE / "loan.csv"])
    templates = (HERE / "loan.clp").read_text()
    assert _ours(kb, applicant) == _decisions_by_clips(templates + HAND_WRITTEN, applicant)


def test_xlsx_equals_csv(tmp_path):
    from openpyxl import Workbook

    book = Workbook()
    sheet = book.active
    for row in (HERE / "loan.csv").read_text().splitlines():
        import csv

        cells = next(csv.reader([row]))
        sheet.append([int(c) if c.isdigit() else c or None for c in cells])
    book.save(tmp_path / "loan.xlsx")
    csv_kb = rules.load_knowledge_base([HERE / "loan.clp", HERE / "loan.csv"])
    xlsx_kb = rules.load_knowledge_base([HERE / "loan.clp", tmp_path / "loan.xlsx"])
    assert csv_kb.sources[1][1] == xlsx_kb.sources[1][1]
    assert sorted(xlsx_kb.rules) == ["approve-north", "print-decision", "reject-low-income", "review-rest"]


def test_tables_load_after_the_clp_files_whatever_the_order():
    kb = rules.load_knowledge_base([HERE / "loan.csv", HERE / "loan.clp"])
    assert [Path(f).suffix for f, _ in kb.sources] == [".clp", ".csv"]


BAD_CASES = [
    ("x 1,,1,,,approve,,\n", "bad.csv:2:1: rule name 'x 1': letters, digits"),
    ("a,,abc def,,,approve,,\n", "bad.csv:2:3: applicant.income: 'abc def' is not a CLIPS value"),
    ("a,,< x,,,approve,,\n", "bad.csv:2:3: applicant.income: 'x' is a SYMBOL; the slot accepts NUMBER"),
    ("a,,,up,,approve,,\n", "bad.csv:2:4: applicant.region: 'up' is not one of the allowed values north"),
    ("a,,,,2000,approve,,\n", "bad.csv:2:5: applicant.score: 2000 is outside the slot's range 0..1000"),
    ("a,,,,,<3,,\n", "bad.csv:2:6: decision.action: a 'then' cell is a value, not a condition"),
    ("a,,,,,,,\n", "bad.csv:2:1: the row has no 'then' value"),
    ("a,high,,,,approve,,\n", "bad.csv:2:2: salience 'high': expected an integer"),
    ("a,,,in,,approve,,\n", "bad.csv:2:4: applicant.region: 'in' needs at least one value"),
    ("print-decision,,,,,approve,,\n", "bad.csv:2:1: rule 'print-decision' is already defined"),
    ("a,,,,,approve,,,extra\n", "bad.csv:2:9: a value beyond the last header column"),
    ("a,,,,1.5,approve,,\n", "bad.csv:2:5: applicant.score: '1.5' is a FLOAT; the slot accepts INTEGER"),
]


@pytest.mark.parametrize(("row", "message"), BAD_CASES, ids=[m.split(": ", 1)[1][:30] for _, m in BAD_CASES])
def test_bad_cells_are_located(tmp_path, row, message):
    shutil.copy(HERE / "loan.clp", tmp_path / "loan.clp")
    (tmp_path / "bad.csv").write_text(HEADER + row)
    diags = [str(d) for d in rules.check_files([tmp_path / "loan.clp", tmp_path / "bad.csv"])]
    assert any(message in d for d in diags), diags


@pytest.mark.parametrize(
    ("header", "message"),
    [
        ("name,then decision.limt\n", "bad.csv:1:2: template 'decision' has no slot 'limt'"),
        ("name,if person.age,then decision.action\n", "bad.csv:1:2: template 'person' is not defined"),
        ("name,when applicant.income,then decision.action\n", "bad.csv:1:2: header 'when applicant.income'"),
        ("if applicant.income,then decision.action\n", "bad.csv:1:1: no 'name' column"),
        ("name,if applicant.income\n", "bad.csv:1:1: no 'then TEMPLATE.SLOT' column"),
        ("", "bad.csv:1:1: the first row must be the header"),
    ],
)
def test_bad_headers_are_located(tmp_path, header, message):
    shutil.copy(HERE / "loan.clp", tmp_path / "loan.clp")
    (tmp_path / "bad.csv").write_text(header)
    diags = [str(d) for d in rules.check_files([tmp_path / "loan.clp", tmp_path / "bad.csv"])]
    assert any(message in d for d in diags), diags


def test_cli_check_run_show(tmp_path):
    runner = CliRunner()
    files = [str(HERE / "loan.clp"), str(HERE / "loan.csv")]
    check = runner.invoke(app, ["kb", "check", *files])
    assert check.exit_code == 0, check.output
    facts = tmp_path / "f.json"
    facts.write_text(json.dumps([{"template": "applicant", "slots": APPLICANTS[1]}]))
    run = runner.invoke(app, ["kb", "run", *files, "--facts", str(facts), "--json"])
    assert run.exit_code == 0, run.output
    assert [f["rule"] for f in json.loads(run.stdout)["firings"]] == ["approve-north", "print-decision"]
    show = runner.invoke(app, ["kb", "show", *files])
    assert show.exit_code == 0 and "(defrule approve-north  ; row 3" in show.output
    assert "(region north|east)" in show.output


def test_a_folder_knowledge_base_includes_its_tables(tmp_path):
    from workbench.pipeline.knowledge import KnowledgeBaseLibrary

    (tmp_path / "loan").mkdir()
    for f in ("loan.clp", "loan.csv"):
        shutil.copy(HERE / f, tmp_path / "loan" / f)
    library = KnowledgeBaseLibrary(tmp_path)
    try:
        assert [p.name for p in library.paths("loan")] == ["loan.clp", "loan.csv"]
        assert "approve-north" in library.load("loan").rules
    finally:
        library.close()


def test_kb_commands_take_a_folder_knowledge_base(tmp_path):
    """Review finding: docs said a folder knowledge base works in the kb commands, but `kb check
    DIR` answered 'cannot read rule file: Is a directory'."""
    folder = tmp_path / "loan"
    folder.mkdir()
    for f in ("loan.clp", "loan.csv"):
        shutil.copy(HERE / f, folder / f)
    check = CliRunner().invoke(app, ["kb", "check", str(folder)])
    assert check.exit_code == 0, check.output
    assert "approve-north" in check.output
    kb = rules.load_knowledge_base(folder)
    assert kb.name == "loan" and [Path(f).name for f, _ in kb.sources] == ["loan.clp", "loan.csv"]


def test_kb_check_of_a_folder_without_rule_files_says_so(tmp_path):
    """n11 #2: `kb check EMPTY_DIR` (or a folder of decision tables only) said 'cannot read rule file: Is a
    directory'; it names the folder and what is missing, located, exit 1."""
    empty = tmp_path / "empty"
    empty.mkdir()
    tables_only = tmp_path / "tables"
    tables_only.mkdir()
    shutil.copy(HERE / "loan.csv", tables_only / "loan.csv")
    for folder in (empty, tables_only):
        check = CliRunner().invoke(app, ["kb", "check", str(folder)])
        assert check.exit_code == 1, check.output
        assert f"{folder}:1:1: no .clp files in this folder" in check.output and "Is a directory" not in check.output


def test_in_keeps_quoted_strings_whole(tmp_path):
    """Review finding: `in "a b" c` was split on spaces before the quotes were read."""
    (tmp_path / "t.clp").write_text(
        "(deftemplate ticket (slot note (type STRING)))\n(deftemplate flag (slot on (type SYMBOL)))\n"
    )
    (tmp_path / "t.csv").write_text('name,if ticket.note,then flag.on\nnoted,"in ""a b"" c",yes\n')
    kb = rules.load_knowledge_base([tmp_path / "t.clp", tmp_path / "t.csv"])
    assert '(ticket (note "a b"|"c"))' in kb.sources[1][1]
    engine = ForwardEngine.from_knowledge_base(kb, config=EngineConfig(workers=1))
    try:
        hits = [
            len(engine.evaluate([Fact("ticket", {"note": rules.String(n)})]).facts_of("flag"))
            for n in ("a b", "c", "a")
        ]
    finally:
        engine.close()
    assert hits == [1, 1, 0]


def test_an_xlsx_formula_without_a_saved_value_is_refused(tmp_path):
    """Review finding: a formula cell written by a script has no cached value, read as empty ("any
    value"), so the rule silently lost its condition."""
    from openpyxl import Workbook

    book = Workbook()
    book.active.append(["name", "if applicant.income", "then decision.action"])
    book.active.append(["a", "=1/0", "approve"])
    book.save(tmp_path / "f.xlsx")
    diags = [str(d) for d in rules.check_files([HERE / "loan.clp", tmp_path / "f.xlsx"])]
    assert any("f.xlsx:2:2: formula =1/0 has no computed value saved" in d for d in diags), diags


def test_a_table_checked_without_its_clp_names_only_the_undefined_templates(tmp_path):
    """Review finding 05: `kb check loan.csv` alone also said "no 'then TEMPLATE.SLOT' column"."""
    shutil.copy(HERE / "loan.csv", tmp_path / "loan.csv")
    r = CliRunner().invoke(app, ["kb", "check", str(tmp_path / "loan.csv")])
    assert r.exit_code == 1
    assert "template 'decision' is not defined" in r.output and "template 'applicant' is not defined" in r.output
    assert "no 'then TEMPLATE.SLOT' column" not in r.output


def test_plain_text_in_a_string_slot_is_a_string_even_when_it_looks_like_a_number(tmp_path):
    """docs/rules.md: in a (type STRING) slot plain text is a string; `12.5` too (it was refused as a FLOAT)."""
    shutil.copy(HERE / "loan.clp", tmp_path / "loan.clp")
    (tmp_path / "t.csv").write_text(HEADER + "r,,,,,approve,12.5,\n")
    kb = rules.load_knowledge_base([tmp_path / "loan.clp", tmp_path / "t.csv"])
    engine = ForwardEngine.from_knowledge_base(kb, config=EngineConfig(workers=1))
    try:
        out = engine.evaluate([Fact("applicant", {"income": 1, "region": "north", "score": 1})])
    finally:
        engine.close()
    reasons = [f.slots["reason"] for f in out.facts_of("decision")]
    assert reasons == ["12.5"] and all(isinstance(r, rules.String) for r in reasons)
    (tmp_path / "t.csv").write_text(HEADER.replace("if applicant.score", "if decision.reason") + "r,,,,> 5,approve,,\n")
    diags = [str(d) for d in rules.check_files([tmp_path / "loan.clp", tmp_path / "t.csv"])]
    assert any("t.csv:2:5: decision.reason: > compares numbers; the slot accepts STRING" in d for d in diags), diags
