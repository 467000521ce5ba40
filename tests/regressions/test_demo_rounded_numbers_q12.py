"""The demo prints the numbers of a rule's reason rounded (q12): CLIPS's `str-cat` writes a float at
full precision ("margin 0.00121971964836121 < 0.02"), which the printout showed as is. Rounded for
display only: the example's lines (the --json report) and the recorded run keep every digit."""

from __future__ import annotations

from rich.console import Console

from workbench.demo.report import print_report, short_numbers
from workbench.demo.runner import DemoReport
from workbench.demo.summary import PipelineSummary

REASON = "refund and transfer are equally likely (margin 0.00121971964836121 < 0.02)"
REPAIR = "position 0 corrected 7 -> 3 (model p=0.130966699857469, best repair elsewhere p=2.28942991953923e-05)"


def test_long_numbers_are_rounded_to_three_significant_digits() -> None:
    assert short_numbers(REASON) == "refund and transfer are equally likely (margin 0.00122 < 0.02)"
    assert short_numbers(REPAIR) == "position 0 corrected 7 -> 3 (model p=0.131, best repair elsewhere p=2.29e-05)"
    kept = "heldout-01: true 34841825, ink 0.0 < 32, score 0.5 < 0.6, version v1.234567, 12345.6789012"
    assert short_numbers(kept) == kept.replace("12345.6789012", "12345.679")


def test_the_printout_rounds_and_the_report_keeps_every_digit() -> None:
    s = PipelineSummary(name="demo_intents", title="intents")
    s.examples.append({"kind": "clarify", "title": "an example", "lines": [f"decision: clarify -- {REASON}"]})
    console = Console(record=True, width=200)
    print_report(DemoReport(summaries=[s]), console=console)
    shown = console.export_text()
    assert "(margin 0.00122 < 0.02)" in shown and "0.00121971964836121" not in shown
    assert s.examples[0]["lines"] == [f"decision: clarify -- {REASON}"]
