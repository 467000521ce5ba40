"""The README's Python example runs as written (from the repository root, like a newcomer)."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_readme_python_example_runs(monkeypatch):
    import torch

    torch.set_num_threads(1)
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    assert len(blocks) == 1
    monkeypatch.chdir(ROOT)
    out = io.StringIO()
    ns: dict = {"__name__": "__readme__"}
    with contextlib.redirect_stdout(out):
        exec(compile(blocks[0], "README.md", "exec"), ns)
    lines = out.getvalue().splitlines()
    assert lines[0] == "escalate fraud_report"
    assert any("by rule escalate-fraud" in line for line in lines)
    assert "all-MiniLM-L6-v2" in lines[-1] and "demo-intent-router" in lines[-1]
    assert ns["result"].ok
