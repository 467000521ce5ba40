"""The main job: `workbench demo` runs the three shipped demo pipelines on real held-out data.

- `demo_digits`  (pipelines/demo_digits.yaml): a digits network reads ID numbers; rules gate,
  correct with a Luhn checksum, send to review, explain.
- `demo_intents` (pipelines/demo_intents.yaml): all-MiniLM-L6-v2 similarity routing; policy rules
  gate, override, refuse, escalate, explain with the nearest labelled example.
- `demo_generate` (pipelines/demo_generate.yaml, run by workbench/demo/generate_demo.py): the demo LM
  streamed through rules as rails.

Public API: `DemoOptions`, `DemoReport`, `run_demo(wb, options)`, `run_demo_sync(options)`,
`print_report(report)`; the parts `run_digits`, `run_intents`, `run_generate`.
"""

from .runner import PARTS, DemoOptions, DemoReport, run_demo, run_demo_sync
from .summary import PipelineSummary

__all__ = ["PARTS", "DemoOptions", "DemoReport", "PipelineSummary", "run_demo", "run_demo_sync", "print_report"]


def print_report(report: DemoReport, console=None, examples: int = 4) -> None:
    """See `workbench.demo.report.print_report`."""
    from .report import print_report as _print

    _print(report, console, examples)
