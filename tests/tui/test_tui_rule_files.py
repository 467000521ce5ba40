"""Rules screen: scenario tests (as `workbench kb test`), decision tables (as `workbench kb show`) and
console programs (as `printf ANSWERS | workbench kb run FILE`), through both backends."""

from __future__ import annotations

import csv
import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from cli import app as cli_app
from tui.app import WorkbenchApp
from tui.backend import BackendError
from tui.messages import ScenariosRan
from tui.widgets.clips_editor import ClipsEditor
from tui.widgets.file_tree import FileTree

ROOT = Path(__file__).resolve().parents[2]
RULES_FIXTURES = Path(__file__).parent / "rules_fixtures"
SCENARIOS = "loan_policy.scenarios.yaml"
TABLE = "loan_table/loan.csv"
# row 3 (approve-north), column 4 (`if applicant.region`): a region the template does not allow
BROKEN_TABLE = (
    (
        "name,salience,if applicant.income,if applicant.region,if applicant.score,"
        "then decision.action,then decision.reason,then decision.limit\n"
    )
    + """reject-low-income,10,< 1000,,,reject,income below 1000,
approve-north,,>= 1000,in north mars,>= 600,approve,good score in the north,5000
"""
)
# the animal program: (read) for yes/no, (readline) for the new animal and its question
ANSWERS = ["yes", "no", "no", "hamster", "Is it small?"]


@pytest.fixture
def rules_workspace(workspace: Path) -> Path:
    """The TUI workspace plus a scenario file, a decision-table knowledge base and a console program."""
    kb = workspace / "knowledge_bases"
    shutil.copy(RULES_FIXTURES / SCENARIOS, kb / SCENARIOS)
    shutil.copytree(RULES_FIXTURES / "loan_table", kb / "loan_table")
    shutil.copy(RULES_FIXTURES / "animal.clp", kb / "animal.clp")
    return workspace


class RecordingApp(WorkbenchApp):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.events: list = []

    def on_scenarios_ran(self, message: ScenariosRan) -> None:
        self.events.append(message)


def kb_test_json(path: Path) -> dict:
    """`workbench kb test PATH --json`, the oracle of the Tests tab."""
    result = CliRunner().invoke(cli_app, ["kb", "test", str(path), "--json"])
    assert result.exit_code in (0, 1, 2), result.output  # 2: a malformed file (still one JSON object)
    return json.loads(result.stdout.splitlines()[0])


def comparable(report: dict) -> list:
    """Scenario results without their timings (what both must agree on)."""
    return [(s["name"], s["passed"], s["failures"]) for s in report["scenarios"]]


# ---- scenario tests ---------------------------------------------------------------------------
async def test_scenarios_from_a_rule_file_agree_with_kb_test(rules_workspace, backend, helpers):
    expected = kb_test_json(rules_workspace / "knowledge_bases" / SCENARIOS)
    assert [s["passed"] for s in expected["scenarios"]] == [True, False]  # one passes, one fails

    app = RecordingApp(backend, mode="kb")
    async with app.run_test(size=helpers.SIZE) as pilot:
        await helpers.settle(pilot)
        screen = app.screen
        assert screen.query_one(FileTree).select_path("loan_policy.clp")
        await pilot.press("enter")
        await helpers.settle(pilot)
        await pilot.press("f7")  # the scenario file beside the rule file
        await helpers.settle(pilot)
        assert app.events and app.events[-1].path == SCENARIOS
        report = app.events[-1].report
        assert comparable(report) == comparable(expected)
        assert (report["passed"], report["failed"]) == (expected["passed"], expected["failed"]) == (1, 1)

        tests = screen.query_one("#kb-tests")
        assert tests.row_count == 2 and app.focused is tests
        assert [str(tests.get_row_at(i)[0]) for i in range(2)] == ["pass", "FAIL"]
        assert str(screen.query_one("#kb-tabs").active) == "tab-tests"
        await pilot.press("down")  # the failing scenario: expected vs actual
        await pilot.pause()
        detail = str(screen.query_one("#kb-test-detail").render())
        assert "low income is rejected: FAIL" in detail
        assert "expected: (decision (action reject))" in detail
        assert "actual:   (decision (action review)" in detail  # the facts of that template present
        assert "expected: reject-low-income" in detail and "actual:   review-low-income" in detail  # what fired
        assert any("1 passed, 1 failed" in n.message for n in app._notifications)


async def test_a_scenario_file_runs_with_ctrl_r_and_a_malformed_one_says_where(rules_workspace, backend, helpers):
    kb = rules_workspace / "knowledge_bases"
    (kb / "bad.yaml").write_text("knowledge_base: loan_policy.clp\nscenarios:\n  - name: x\n    facts: []\n")
    expected_bad = kb_test_json(kb / "bad.yaml")
    app = RecordingApp(backend, mode="kb")
    async with app.run_test(size=helpers.SIZE) as pilot:
        await helpers.settle(pilot)
        screen = app.screen
        tree = screen.query_one(FileTree)
        assert tree.select_path(SCENARIOS)
        await pilot.press("enter")
        await helpers.settle(pilot)
        assert "low income is rejected" in screen.query_one(ClipsEditor).text
        await pilot.press("ctrl+r")
        await helpers.settle(pilot)
        assert [s["passed"] for s in app.events[-1].report["scenarios"]] == [True, False]

        tree.focus()
        assert tree.select_path("bad.yaml")
        await pilot.press("enter")
        await helpers.settle(pilot)
        await pilot.press("ctrl+r")
        await helpers.settle(pilot)
        report = app.events[-1].report
        assert report["scenarios"] == [] and report["error"]
        # the same located message as `kb test` (which names the file as it was given)
        assert report["error"].split(": ", 1)[1] == expected_bad["error"].split(": ", 1)[1]
        assert "scenarios[0].expect" in str(screen.query_one("#kb-test-detail").render())


async def test_scenarios_through_both_backends_match_kb_test(rules_workspace, any_backend):
    kb = rules_workspace / "knowledge_bases"
    assert SCENARIOS in any_backend.list_scenario_files()
    assert "low income is rejected" in any_backend.read_scenario_file(SCENARIOS)
    report = any_backend.run_scenarios(SCENARIOS)
    assert comparable(report) == comparable(kb_test_json(kb / SCENARIOS))
    assert report["file"] == SCENARIOS and report["error"] is None

    (kb / "broken_kb.clp").write_text("(defrule oops =>\n")
    (kb / "broken.scenarios.yaml").write_text(
        "knowledge_base: broken_kb.clp\nscenarios:\n  - name: x\n    expect: {fired: [oops]}\n"
    )
    broken = any_backend.run_scenarios("broken.scenarios.yaml")
    assert broken["error"] == "the knowledge base does not load"
    assert broken["diagnostics"] and broken["diagnostics"][0]["text"].startswith("broken_kb.clp:")
    assert str(kb) not in json.dumps(broken)  # no server paths

    (rules_workspace / "outside.clp").write_text("(deftemplate t (slot a))\n")
    (kb / "escape.yaml").write_text(
        "knowledge_base: ../outside.clp\nscenarios:\n  - name: x\n    expect: {fired: [a]}\n"
    )
    for path in ("escape.yaml", "../pipelines/loan.yaml", "missing.yaml"):
        with pytest.raises(BackendError):
            any_backend.run_scenarios(path)


# ---- decision tables --------------------------------------------------------------------------
def kb_show(folder: Path) -> str:
    result = CliRunner().invoke(cli_app, ["kb", "show", str(folder)])
    assert result.exit_code == 0, result.output
    return result.stdout


async def test_a_decision_table_is_shown_with_its_generated_rules(rules_workspace, backend, helpers):
    folder = rules_workspace / "knowledge_bases" / "loan_table"
    shown = kb_show(folder)
    section = shown[shown.index(";;; " + str(folder / "loan.csv")) :].split("\n", 1)[1].rstrip("\n")
    app = RecordingApp(backend, mode="kb")
    async with app.run_test(size=helpers.SIZE) as pilot:
        await helpers.settle(pilot)
        screen = app.screen
        tree = screen.query_one(FileTree)
        assert tree.select_path(TABLE) and tree.select_path("loan_table/loan.clp")
        tree.select_path(TABLE)
        await pilot.press("enter")
        await helpers.settle(pilot)
        table = screen.query_one("#kb-table")
        assert screen.query_one("#kb-view").current == "kb-table" and app.focused is table
        assert (table.row_count, len(table.columns)) == (3, 8)
        assert [str(c.label) for c in table.columns.values()][2] == "if applicant.income"
        assert str(table.get_row_at(1)[3]) == "in north east"
        status = str(screen.query_one("#kb-status").render())
        assert "decision table · 3 rows" in status and "✓ 3 rules" in status

        await pilot.press("ctrl+g")  # the generated rules, as `kb show` prints them
        await pilot.pause()
        editor = screen.query_one(ClipsEditor)
        assert screen.query_one("#kb-view").current == "kb-editor" and editor.read_only
        assert editor.text == f";;; {TABLE}\n{section}\n"
        assert "(defrule approve-north" in editor.text
        await pilot.press("ctrl+g")
        await pilot.pause()
        assert screen.query_one("#kb-view").current == "kb-table"

        # a cell the template refuses: located as file.csv:ROW:COL, the whole message in Problems
        (folder / "loan.csv").write_text(BROKEN_TABLE)
        checked = CliRunner().invoke(cli_app, ["kb", "check", str(folder)])
        cli_lines = [line for line in checked.output.splitlines() if "loan.csv:" in line]
        assert cli_lines, checked.output
        await pilot.press("f5")
        await helpers.settle(pilot)
        problems = screen.query_one("#kb-problems")
        shown_lines = [str(problems.get_option_at_index(i).prompt) for i in range(problems.option_count)]
        assert shown_lines[0].startswith("loan_table/loan.csv:3:4: ")
        assert [s.split("loan_table/", 1)[1] for s in shown_lines] == [c.split("loan_table/", 1)[1] for c in cli_lines]
        assert "mars" in shown_lines[0] and str(screen.query_one("#kb-tabs").active) == "tab-problems"
        assert "✗ 1 problem" in str(screen.query_one("#kb-status").render())


async def test_decision_tables_through_both_backends(rules_workspace, any_backend):
    assert any_backend.list_decision_tables() == [TABLE]
    assert TABLE not in any_backend.list_kb_files()  # listed as a table, not as a rule file to edit
    doc = any_backend.decision_table(TABLE)
    assert doc["knowledge_base"] == ["loan_table/loan.clp", TABLE]
    assert doc["rows"][0][0] == "name" and len(doc["rows"]) == 4
    assert doc["rules"].count("(defrule ") == 3 and doc["diagnostics"] == []
    (rules_workspace / "knowledge_bases" / TABLE).write_text(BROKEN_TABLE)
    broken = any_backend.decision_table(TABLE)
    assert broken["rules"] == "" and broken["diagnostics"][0]["text"].startswith(f"{TABLE}:3:4: ")
    with pytest.raises(BackendError):
        any_backend.decision_table("../pipelines/loan.yaml")


def test_an_xlsx_decision_table_through_both_backends(rules_workspace, any_backend):
    from openpyxl import Workbook

    folder = rules_workspace / "knowledge_bases" / "xl_table"
    folder.mkdir()
    shutil.copy(RULES_FIXTURES / "loan_table" / "loan.clp", folder / "loan.clp")
    book = Workbook()
    for row in csv.reader(io.StringIO((RULES_FIXTURES / TABLE).read_text())):
        book.active.append([int(c) if c.isdigit() else c for c in row])
    book.save(folder / "loan.xlsx")
    doc = any_backend.decision_table("xl_table/loan.xlsx")
    assert doc["diagnostics"] == [] and doc["rows"][1][:2] == ["reject-low-income", "10"]
    assert doc["rules"] == any_backend.decision_table(TABLE)["rules"]


# ---- console programs -------------------------------------------------------------------------
def kb_run_piped(path: Path, answers: list[str]) -> str:
    """`printf 'a\\nb\\n' | workbench kb run PATH`: a real pipe on the child's standard input."""
    done = subprocess.run(
        [sys.executable, "-m", "cli", "kb", "run", str(path)],
        input="".join(f"{a}\n" for a in answers).encode(),
        capture_output=True,
        timeout=120,
        cwd=ROOT,
        check=True,
    )
    return done.stdout.decode()


def keys(text: str) -> list[str]:
    """The key presses that type `text`."""
    return [{" ": "space", "?": "question_mark"}.get(c, c) for c in text]


async def test_a_console_program_takes_answers_in_the_console_pane(rules_workspace, backend, helpers):
    expected = kb_run_piped(rules_workspace / "knowledge_bases" / "animal.clp", ANSWERS)
    assert "What is the animal? " in expected and "Learned: hamster" in expected
    app = RecordingApp(backend, mode="kb")
    async with app.run_test(size=helpers.SIZE) as pilot:
        await helpers.settle(pilot)
        screen = app.screen
        assert screen.query_one(FileTree).select_path("animal.clp")
        await pilot.press("enter")
        await helpers.settle(pilot)
        await pilot.press("f6")
        entry = screen.query_one("#kb-console-input")
        assert app.focused is entry and str(screen.query_one("#kb-tabs").active) == "tab-console"
        for answer in ANSWERS:
            await helpers.wait_until(
                pilot, lambda: screen.console is not None and screen.console.waiting.is_set(), what="a prompt"
            )
            await helpers.wait_until(pilot, lambda: screen.console_text.endswith(" "), what="the prompt shown")
            await pilot.press(*keys(answer), "enter")  # typed into the input line
        await helpers.wait_until(pilot, lambda: screen.console.closed, what="the program's end")
        await helpers.settle(pilot)
        assert screen.console_text == expected
        log = "\n".join(str(line.text) for line in screen.query_one("#kb-console-log").lines)
        assert "Is the animal warm-blooded? (yes or no) yes" in log  # prompt and the answer typed
        assert "What is the animal? hamster" in log and "— ended:" in log
        assert screen.query_one("#kb-firings").row_count > 0


async def test_end_of_input_in_the_console_is_clips_eof(rules_workspace, backend, helpers):
    expected = kb_run_piped(rules_workspace / "knowledge_bases" / "animal.clp", ["yes"])
    app = RecordingApp(backend, mode="kb")
    async with app.run_test(size=helpers.SIZE) as pilot:
        await helpers.settle(pilot)
        screen = app.screen
        assert screen.query_one(FileTree).select_path("animal.clp")
        await pilot.press("enter")
        await helpers.settle(pilot)
        await pilot.press("f6")
        await helpers.wait_until(pilot, lambda: screen.console.waiting.is_set(), what="a prompt")
        screen.query_one("#kb-console-input").value = "yes"
        await pilot.press("enter")
        await helpers.wait_until(pilot, lambda: screen.console_text.count("(yes or no)") == 2, what="question 2")
        await pilot.press("ctrl+d")
        await helpers.wait_until(pilot, lambda: screen.console.closed, what="the program's end")
        await helpers.settle(pilot)
        assert screen.console_text == expected and "goodbye" in expected


async def test_over_http_console_programs_say_they_run_in_process_and_tests_run(
    rules_workspace, workbench, live_server, helpers
):
    from tui.http_backend import HttpBackend

    backend = HttpBackend(live_server.url)
    try:
        with pytest.raises(BackendError, match="only in the TUI's own process"):
            backend.run_kb_console("animal", [], None)
        app = RecordingApp(backend, mode="kb")
        async with app.run_test(size=helpers.SIZE) as pilot:
            await helpers.settle(pilot)
            screen = app.screen
            assert screen.query_one(FileTree).select_path("animal.clp")
            await pilot.press("enter")
            await helpers.settle(pilot)
            await pilot.press("f6")
            await helpers.settle(pilot)
            assert any("only in the TUI's own process" in n.message for n in app._notifications)
            assert screen.console is None

            # scenario tests and decision tables work the same over HTTP
            screen.query_one(FileTree).focus()
            assert screen.query_one(FileTree).select_path("loan_policy.clp")
            await pilot.press("enter")
            await helpers.settle(pilot)
            await pilot.press("f7")
            await helpers.settle(pilot)
            assert [s["passed"] for s in app.events[-1].report["scenarios"]] == [True, False]
            screen.query_one(FileTree).focus()
            assert screen.query_one(FileTree).select_path(TABLE)
            await pilot.press("enter")
            await helpers.settle(pilot)
            assert screen.query_one("#kb-table").row_count == 3
    finally:
        backend.close()


# ---- the API routes on a real server ---------------------------------------------------------
def test_scenario_and_table_routes_on_uvicorn(rules_workspace, live_server):
    with httpx.Client(base_url=live_server.url, timeout=60) as http:
        assert SCENARIOS in http.get("/v1/scenarios").json()["files"]
        ran = http.post("/v1/scenarios/run", json={"file": SCENARIOS})
        assert ran.status_code == 200 and (ran.json()["passed"], ran.json()["failed"]) == (1, 1)
        assert http.post("/v1/scenarios/run", json={"file": "../pipelines/loan.yaml"}).status_code == 422
        assert http.post("/v1/scenarios/run", json={"file": "nope.yaml"}).status_code == 404
        assert http.post("/v1/scenarios/run", json={"file": SCENARIOS, "x": 1}).status_code == 422
        assert http.get("/v1/decision-tables").json() == {"files": [TABLE]}
        table = http.get("/v1/decision-tables/table", params={"file": TABLE})
        assert table.status_code == 200 and table.json()["rules"].count("(defrule ") == 3
        schema = http.get("/openapi.json").json()
        ok = schema["paths"]["/v1/scenarios/run"]["post"]["responses"]["200"]["content"]["application/json"]
        assert ok["schema"]["$ref"].endswith("/ScenarioReport")


async def test_a_waiting_program_ends_when_restarted_or_when_the_app_quits(rules_workspace, backend, helpers):
    app = RecordingApp(backend, mode="kb")
    async with app.run_test(size=helpers.SIZE) as pilot:
        await helpers.settle(pilot)
        screen = app.screen
        assert screen.query_one(FileTree).select_path("animal.clp")
        await pilot.press("enter")
        await helpers.settle(pilot)
        await pilot.press("f6")
        await helpers.wait_until(pilot, lambda: screen.console.waiting.is_set(), what="a prompt")
        first = screen.console
        await pilot.press("f6")  # start again: the first run gets EOF and ends; its text stays out of the pane
        await helpers.wait_until(pilot, lambda: screen.console is not first and screen.console.waiting.is_set())
        assert first.closed
        await pilot.pause(0.3)
        assert screen.console_text == "Is the animal warm-blooded? (yes or no) "
        waiting = screen.console
    # the app quit while the program waited: it got EOF (no thread left blocked)
    assert waiting.closed


async def test_over_http_a_file_beside_a_table_checks_with_the_table_as_the_server_gives_it(
    rules_workspace, live_server, helpers
):
    """r12: GET /v1/kb/NAME gives a decision table as its CSV (`format: csv`) and check reads it so; the
    TUI over --url checks an edited .clp with it: a clean file has no problems, a broken one its error."""
    from tui.http_backend import HttpBackend

    app = RecordingApp(HttpBackend(live_server.url), mode="kb")
    async with app.run_test(size=helpers.SIZE) as pilot:
        await helpers.settle(pilot)
        screen = app.screen
        tree = screen.query_one(FileTree)
        assert tree.select_path("loan_table/loan.clp")
        await pilot.press("enter")
        await helpers.settle(pilot)
        await pilot.press("f5")
        await helpers.settle(pilot)
        problems = screen.query_one("#kb-problems")
        assert problems.option_count == 0, [
            str(problems.get_option_at_index(i).prompt) for i in range(problems.option_count)
        ]
        editor = screen.query_one(ClipsEditor)
        editor.text = editor.text.replace("(slot income (type NUMBER))", "(slot income (type NUMBER)")
        await pilot.press("f5")
        await helpers.settle(pilot)
        shown = [str(problems.get_option_at_index(i).prompt) for i in range(problems.option_count)]
        # its own error, and (as `kb check DIR` says too) the table's templates then undefined
        assert any(s.startswith("5:2 ") and "unexpected" in s for s in shown), shown
