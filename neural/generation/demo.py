"""Where the demo language model lives (trained by scripts/train_demo_lm.py, committed in the repo)."""

from __future__ import annotations

import os
from pathlib import Path

# The repository's models/demo-lm (a source checkout); WORKBENCH_DEMO_LM overrides it.
DEMO_LM_DIR = Path(os.environ.get("WORKBENCH_DEMO_LM", Path(__file__).resolve().parents[2] / "models" / "demo-lm"))
