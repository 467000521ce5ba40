"""The scripting example in docs/scripting.md (copied into the README) runs as written."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "scripting.md"


def test_scripting_example_runs(monkeypatch):
    import torch

    torch.set_num_threads(1)
    code = re.search(r"```python\n(.*?)```", DOC.read_text(), re.S).group(1)
    out = io.StringIO()
    ns: dict = {"__name__": "__scripting_example__"}
    with contextlib.redirect_stdout(out):
        exec(compile(code, str(DOC), "exec"), ns)
    text = out.getvalue()
    one = ns["one"]
    assert one.ok and one.outputs["desk"] == "refunds" and one.outputs["score"] >= 0.5
    assert [r.outputs["desk"] for r in ns["many"]] == ["general", "refused"]
    assert "gate gate chose embed by rule embed-the-rest" in text
    assert "'all-MiniLM-L6-v2'" in text
