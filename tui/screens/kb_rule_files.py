"""The Rules screen's other files and programs: scenario tests, decision tables, the console pane.

A mixin of `KnowledgeBaseScreen` (tui/screens/knowledge_bases.py), which composes the widgets
named here:

- scenario files (`*.yaml`): **ctrl+r** on one, or **f7** on a rule file with a
  `NAME.scenarios.yaml` beside it, runs them through the backend (`run_scenarios`, the document of
  `workbench kb test --json`) into the Tests tab: a pass/fail table, and for the highlighted
  scenario what was expected and what was there;
- decision tables (`*.csv`, `*.xlsx`): shown as a table of their cells; **ctrl+g** switches to the
  rules generated from the rows (as `workbench kb show` prints them) and back; located errors
  (`file.csv:ROW:COL: message`) are listed in full under Problems;
- console programs: **f6** runs the open file's knowledge base with the Console tab as its
  terminal (`run_kb_console`): output and prompts appear as printed, the input line sends an
  answer, **ctrl+d** there ends the input (CLIPS's EOF). In-process only: a server refuses console
  input, and the HTTP backend says so.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual import on, work
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
from textual.screen import Screen
from textual.widgets import ContentSwitcher, DataTable, Input, OptionList, RichLog, Static, TabbedContent
from textual.widgets.option_list import Option

from ..backend import ConsoleChannel
from ..messages import KnowledgeBaseRan, ScenariosRan
from ..widgets.clips_editor import ClipsEditor

SCENARIO_SUFFIXES = (".yaml", ".yml")
TABLE_SUFFIXES = (".csv", ".xlsx")


def kind_of(path: str) -> str:
    """ "scenarios", "table" or "rules" by the file's suffix."""
    low = path.lower()
    if low.endswith(SCENARIO_SUFFIXES):
        return "scenarios"
    if low.endswith(TABLE_SUFFIXES):
        return "table"
    return "rules"


class ConsoleOutput(Message):
    """Text a console program printed (posted from the engine's thread)."""

    def __init__(self, channel: ConsoleChannel, text: str) -> None:
        super().__init__()
        self.channel, self.text = channel, text


class ConsoleEnded(Message):
    """A console program ended; `result` is the run document (None when it failed to start)."""

    def __init__(self, channel: ConsoleChannel, name: str, result: dict[str, Any] | None) -> None:
        super().__init__()
        self.channel, self.name, self.result = channel, name, result


class ConsoleInput(Input):
    """The console's input line; ctrl+d there is the end of input, as in a terminal."""

    BINDINGS = [Binding("ctrl+d", "end_input", "End input")]

    def action_end_input(self) -> None:
        self.screen.action_end_input()  # type: ignore[attr-defined]


class ConsolePane(Vertical):
    """The Console tab: the program's terminal (output as printed, answers echoed) and an input line."""

    def compose(self):
        yield RichLog(id="kb-console-log", wrap=True, markup=False, auto_scroll=True)
        yield ConsoleInput(placeholder="answer (enter sends it) · ctrl+d ends the input", id="kb-console-input")


class RuleFilesMixin(Screen):
    """Scenario tests, decision tables and console programs of the Rules screen (see the module).
    A Screen subclass only so that its `@on` handlers are collected (Textual gathers them per
    message-pump class); it composes nothing."""

    # set by KnowledgeBaseScreen
    path: str | None
    report: dict[str, Any] | None = None
    table_doc: dict[str, Any] | None = None
    console: ConsoleChannel | None = None
    console_text: str = ""  # what the running (or last) console program printed, nothing else

    # ---- opening -------------------------------------------------------------------------------
    def show_view(self, view: str) -> None:
        """`editor` (rule text, scenario text, generated rules) or `table` (a decision table's cells)."""
        self.query_one("#kb-view", ContentSwitcher).current = "kb-table" if view == "table" else "kb-editor"

    @work(exclusive=True, group="kb-open", exit_on_error=False)
    async def open_table(self, path: str) -> None:
        """Show a decision table's cells; its problems (located, in full) under Problems."""
        table = self.query_one("#kb-table", DataTable)
        doc = await self.call(f"read {path}", self.backend.decision_table, path, busy=table)
        self.remember_buffer()
        self.path, self.table_doc = path, doc
        editor = self.query_one(ClipsEditor)
        editor.read_only = True
        editor.load_text(_shown_rules(doc))
        editor.clear_markers()
        table.clear(columns=True)
        rows = doc.get("rows") or []
        if rows:
            header, *body = rows
            width = max(len(r) for r in rows)
            table.add_columns(*[str(h) or f"col {i + 1}" for i, h in enumerate(header)], *[""] * (width - len(header)))
            for r in body:
                table.add_row(*[Text(c) for c in r], *[""] * (width - len(r)))
        self.show_view("table")
        self.show_located(doc.get("diagnostics") or [])
        table.focus()

    def action_toggle_generated(self) -> None:
        """Between a decision table's cells and the rules generated from them."""
        if self.path is None or kind_of(self.path) != "table":
            self.notify("open a decision table (.csv, .xlsx) first", severity="warning")
            return
        switcher = self.query_one("#kb-view", ContentSwitcher)
        self.show_view("table" if switcher.current == "kb-editor" else "editor")
        self.update_status()

    def show_located(self, diagnostics: list[dict[str, Any]]) -> None:
        """Problems as `file:line:col: message`, in full (wrapped), without editor markers."""
        self.diagnostics = []
        problems = self.query_one("#kb-problems", OptionList)
        problems.clear_options()
        for i, d in enumerate(diagnostics):
            text = d.get("text") or f"{d.get('file')}:{d.get('line')}:{d.get('column')}: {d.get('message')}"
            problems.add_option(Option(Text(text), id=f"located-{i}"))
        problems.highlighted = 0 if diagnostics else None
        if diagnostics:
            self.query_one(TabbedContent).active = "tab-problems"
        self.located = diagnostics
        self.query_one(ClipsEditor).clear_markers()
        self.update_status()

    # ---- scenario tests ------------------------------------------------------------------------
    def action_test(self) -> None:
        """Run the scenario file open, or the one beside the open rule file (`NAME.scenarios.yaml`)."""
        if self.path is None:
            self.notify("open a scenario file (.yaml) or a rule file first", severity="warning")
            return
        if kind_of(self.path) == "scenarios":
            self.run_tests(self.path)
            return
        self.run_tests_beside(self.path)

    @work(exclusive=True, group="kb-tests", exit_on_error=False)
    async def run_tests_beside(self, path: str) -> None:
        stem = path.rsplit(".", 1)[0]
        folder = path.rsplit("/", 1)[0] + "/" if "/" in path else ""
        files = await self.call("list scenario files", self.backend.list_scenario_files)
        wanted = [f"{stem}.scenarios.yaml", f"{stem}.scenarios.yml"]
        found = [f for f in wanted if f in files] or [
            f for f in files if folder and f.startswith(folder) and f.count("/") == folder.count("/")
        ]
        if not found:
            self.notify(
                f"no scenario file beside {path}: write {wanted[0]} (the format of `workbench kb test`)",
                severity="warning",
                timeout=8,
            )
            return
        self.run_tests(found[0])

    @work(exclusive=True, group="kb-tests", exit_on_error=False)
    async def run_tests(self, path: str) -> None:
        if self.path == path and self.modified:
            self.notify("save first (ctrl+s): scenarios run from the saved file", severity="warning")
            return
        tests = self.query_one("#kb-tests", DataTable)
        report = await self.call(f"test {path}", self.backend.run_scenarios, path, busy=tests)
        self.show_report(path, report)
        tests.focus()
        self.post_message(ScenariosRan(path, report))

    def show_report(self, path: str, report: dict[str, Any]) -> None:
        """Fill the Tests tab: one row per scenario, the highlighted one's failures beside."""
        self.report = report
        tests = self.query_one("#kb-tests", DataTable)
        tests.clear()
        for s in report.get("scenarios", []):
            result = Text("pass", style="green") if s["passed"] else Text("FAIL", style="bold red")
            tests.add_row(result, Text(s["name"]), key=s["name"])
        self.query_one(TabbedContent).active = "tab-tests"
        if report.get("error"):
            self.show_located(report.get("diagnostics") or [])
            self.query_one(TabbedContent).active = "tab-tests"
            self.query_one("#kb-test-detail", Static).update(
                Text.assemble(("not run: ", "bold red"), report["error"], *_located_lines(report))
            )
            self.notify(report["error"], title=path, severity="error", timeout=10)
            return
        self._detail(0)
        passed, failed = report.get("passed", 0), report.get("failed", 0)
        self.notify(
            f"{passed} passed, {failed} failed",
            title=path,
            severity="error" if failed else "information",
        )

    @on(DataTable.RowHighlighted, "#kb-tests")
    def _scenario_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._detail(event.cursor_row)

    def _detail(self, row: int) -> None:
        scenarios = (self.report or {}).get("scenarios") or []
        detail = self.query_one("#kb-test-detail", Static)
        if not 0 <= row < len(scenarios):
            detail.update("")
            return
        detail.update(scenario_detail(scenarios[row]))

    # ---- console programs ------------------------------------------------------------------------
    def action_console(self) -> None:
        """Run the open file's knowledge base with the Console tab as its terminal."""
        if self.path is None or kind_of(self.path) == "scenarios":
            self.notify("open a rule file (.clp) or a decision table first", severity="warning")
            return
        if self.modified:
            self.notify("save first (ctrl+s): rules run from the saved files", severity="warning")
            return
        if not self.backend.console_runs:
            self.notify(
                "programs that read the console (read, readline) run only in the TUI's own process: a server "
                "refuses console input. Start `workbench tui` without --url, or use `workbench kb run` in a terminal.",
                title="console",
                severity="warning",
                timeout=10,
            )
            return
        self.stop_console()
        name = self.backend.kb_name_for(self.path)
        log = self.query_one("#kb-console-log", RichLog)
        log.clear()
        log.write(Text(f"— {name}: running (ctrl+d ends the input)", style="dim"))
        self.console_text = ""
        self.console = channel = ConsoleChannel(lambda text: self.post_message(ConsoleOutput(channel, text)))
        self.query_one(TabbedContent).active = "tab-console"
        self.query_one("#kb-console-input", Input).focus()
        self.run_console(name, self.console)

    @work(group="kb-console", exit_on_error=False)  # not exclusive: a program left by f6 ends on EOF by itself
    async def run_console(self, name: str, console: ConsoleChannel) -> None:
        result = None
        try:
            result = await self.call(f"console {name}", self.backend.run_kb_console, name, [], console)
        finally:
            console.close()
            self.post_message(ConsoleEnded(console, name, result))

    @on(ConsoleOutput)
    def _console_output(self, message: ConsoleOutput) -> None:
        if message.channel is not self.console:
            return  # a program left by f6 (it got EOF) still printing while it ends
        self.console_text += message.text
        self._write_console(message.text)

    def _write_console(self, text: str, style: str = "") -> None:
        """Append to the terminal; a line without its newline yet (a prompt) stays open for the answer."""
        log = self.query_one("#kb-console-log", RichLog)
        pending = getattr(self, "_pending", "") + text
        *lines, self._pending = pending.split("\n")
        for line in lines:
            log.write(Text(line, style=style))
        self.query_one("#kb-console-input", Input).placeholder = (
            f"{self._pending.strip()} …" if self._pending.strip() else "answer (enter sends it) · ctrl+d ends the input"
        )

    @on(Input.Submitted, "#kb-console-input")
    def _answer(self, event: Input.Submitted) -> None:
        if self.console is None or self.console.closed:
            self.notify("no console program is running (f6 starts one)", severity="warning")
            return
        prompt, self._pending = getattr(self, "_pending", ""), ""
        self.query_one("#kb-console-log", RichLog).write(Text.assemble(prompt, (event.value, "bold cyan")))
        self.console.send(event.value)
        event.input.value = ""

    def action_end_input(self) -> None:
        if self.console is not None and not self.console.closed:
            self.console.close()
            self.query_one("#kb-console-log", RichLog).write(Text("— end of input (EOF)", style="dim"))

    @on(ConsoleEnded)
    def _console_ended(self, message: ConsoleEnded) -> None:
        if message.channel is not self.console:
            return
        if getattr(self, "_pending", ""):
            self._write_console("\n")
        log = self.query_one("#kb-console-log", RichLog)
        if message.result is None:
            log.write(Text("— the program did not run (see the notification)", style="red"))
            return
        result = message.result
        tail = f"; {result['error']}" if result.get("error") else ""
        log.write(Text(f"— ended: {len(result.get('firings', []))} firings{tail}", style="dim"))
        self.show_result(result, switch=False)
        self.post_message(KnowledgeBaseRan(message.name, result))

    def stop_console(self) -> None:
        """End the input of a running console program (it then ends as on EOF)."""
        if self.console is not None:
            self.console.close()


def _shown_rules(doc: dict[str, Any]) -> str:
    """As `workbench kb show` prints the table's part: `;;; FILE` then the generated rules."""
    if not doc.get("rules"):
        return f";;; {doc['file']}\n; no rules: the table has errors (see Problems)\n"
    return f";;; {doc['file']}\n{doc['rules'].rstrip(chr(10))}\n"


def _located_lines(report: dict[str, Any]) -> list[str]:
    return [f"\n{d.get('text') or d.get('message')}" for d in report.get("diagnostics") or []]


def scenario_detail(scenario: dict[str, Any]) -> Text:
    """Expected vs actual for each failed check of one scenario (as `workbench kb test` tabulates them)."""
    if scenario["passed"]:
        return Text.assemble((f"{scenario['name']}: ", "bold"), ("pass", "green"), f" ({scenario['seconds']:.3f} s)")
    out = Text.assemble((f"{scenario['name']}: ", "bold"), ("FAIL", "bold red"))
    for f in scenario["failures"]:
        out.append(f"\n{f['check']}\n", style="bold")
        out.append("  expected: ", style="dim")
        out.append(f"{f['expected']}\n")
        out.append("  actual:   ", style="dim")
        out.append(f"{f['actual']}")
    return out


__all__ = ["ConsolePane", "RuleFilesMixin", "ScenariosRan", "kind_of", "scenario_detail"]
