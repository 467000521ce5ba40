"""Shared output of benchmarks: a rich table on the terminal and a JSON document."""

from __future__ import annotations

import json
import os
import platform
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table


def percentile_ms(seconds: Iterable[float], q: float, digits: int = 2) -> float:
    """The q-th percentile (q in 0..100) of durations given in seconds, in milliseconds, rounded to
    `digits` decimals; NaN when there are none.

    The one percentile of every benchmark: `numpy.percentile` with its default linear interpolation
    between the two nearest ranks (Hyndman & Fan type 7, as NumPy, R and pandas by default).
    Raises ValueError for q outside 0..100.
    """
    values = np.fromiter(seconds, dtype=np.float64)
    if not 0 <= q <= 100:
        raise ValueError(f"percentile q={q} is outside 0..100")
    if values.size == 0:
        return float("nan")
    return round(float(np.percentile(values, q)) * 1000.0, digits)


def machine_info() -> dict[str, Any]:
    """Describe the machine a benchmark ran on: CPU count, platform, Python, torch device."""
    info: dict[str, Any] = {
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpu_count": os.cpu_count(),
        "processor": platform.processor() or platform.machine(),
    }
    try:
        import torch

        info["torch"] = torch.__version__
        info["torch_threads"] = torch.get_num_threads()
        info["cuda"] = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    except Exception as exc:  # torch missing or broken: still report the rest
        info["torch_error"] = str(exc)
    return info


PIPE_WIDTH = 200  # columns when stdout is not a terminal and COLUMNS is unset


def report_console() -> Console:
    """A rich console for report tables: as wide as the terminal, and PIPE_WIDTH columns when the
    output goes to a pipe or a log (rich assumes 80 there, squeezing wide tables into ellipses);
    `COLUMNS` wins when set."""
    console = Console()
    if not console.is_terminal and not os.environ.get("COLUMNS"):
        console = Console(width=PIPE_WIDTH)
    return console


def print_rows(name: str, rows: list[dict[str, Any]], console: Console | None = None) -> None:
    """Print benchmark rows as tables: consecutive rows of the same shape (sharing more than half
    their keys) form one table whose columns are the union of their keys, in order."""
    console = console or report_console()
    groups: list[list[dict[str, Any]]] = []
    for row in rows:
        if groups:
            keys = {k for r in groups[-1] for k in r}
            if 2 * len(keys & row.keys()) > len(row):
                groups[-1].append(row)
                continue
        groups.append([row])
    for part in groups:
        columns: list[str] = []
        for row in part:
            for key in row:
                if key not in columns:
                    columns.append(key)
        table = Table(title=f"bench {name}")
        for col in columns:
            table.add_column(col, justify="right" if _numeric(part, col) else "left")
        for row in part:
            table.add_row(*[_fmt(row.get(col)) for col in columns])
        console.print(table)


def write_json(name: str, rows: list[dict[str, Any]], out: Path, extra: dict[str, Any] | None = None) -> None:
    """Write `{"bench": name, "machine": {...}, "rows": rows, ...extra}` to `out`, whose folder must exist
    (`cli.outputs`: no output option creates missing folders). Raises OSError (e.g. FileNotFoundError)."""
    doc: dict[str, Any] = {
        "bench": name,
        "machine": machine_info(),
        "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "rows": rows,
    }
    if extra:
        doc.update(extra)
    out.write_text(json.dumps(doc, indent=2, default=str) + "\n")


def _numeric(rows: list[dict[str, Any]], col: str) -> bool:
    return all(isinstance(r.get(col), (int, float)) or r.get(col) is None for r in rows)


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4g}" if abs(value) < 1e5 else f"{value:,.0f}"
    return str(value)
