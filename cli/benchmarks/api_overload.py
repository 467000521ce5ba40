"""`workbench bench api_overload`: the overload goal of issue 14 alone (the `overload` row of
`workbench bench api`, without the three-server comparison).

One `workbench` server (the real app, as in `bench api`) in its own process; the client measures
the sustainable rate (closed loop, concurrency 64, answers per second) and then offers 3x that
rate open loop (fixed arrival times, a new connection whenever all open ones are busy) for
`OVERLOAD_S` seconds, with a client that costs a few tens of microseconds per request
(`_http_load`), so this 2-core machine can offer it. Row: offered rps, admitted rps, 429 count,
admitted p50 / p99, resets (transport errors), runs recorded vs 200 answers.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from . import api

EXTRA: dict[str, Any] = api.EXTRA
OVERLOAD_S = 20.0


def run(quick: bool = False) -> list[dict[str, Any]]:
    """Start the workbench server, warm it up, run the overload; returns [the overload row].

    Raises RuntimeError if the server does not become ready within 300 s."""
    import asyncio

    payloads = [{"input": x} for x in api._pipeline_inputs()]
    with tempfile.TemporaryDirectory(prefix="bench-overload-") as tmp:
        port = api._free_port()
        url = f"http://127.0.0.1:{port}"
        proc, log = api._start_server(Path(tmp), "workbench", port)
        try:
            api._wait_ready(url, proc, log)
            asyncio.run(api._drive(url, "POST", api.PATHS["workbench"], payloads, 16, 2.0))  # warm-up
            row = api.run_overload(url, payloads, 4.0 if quick else OVERLOAD_S, Path(tmp))
            EXTRA["cores"] = os.cpu_count()
            return [row]
        finally:
            proc.terminate()
            proc.wait(30)
