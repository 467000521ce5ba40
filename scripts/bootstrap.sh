#!/usr/bin/env bash
# Set-up shared by the README's commands: make sure uv exists, then install the locked
# environment (.venv) exactly as uv.lock pins it. Safe to run again: it only syncs.
set -euo pipefail
cd "$(dirname "$0")/.."
if command -v uv >/dev/null 2>&1; then
  UV=(uv)
elif python3 -m uv --version >/dev/null 2>&1; then
  UV=(python3 -m uv)
else
  echo "bootstrap: installing uv from the package index (pip install --user uv)" >&2
  python3 -m pip install --quiet --user uv || python3 -m pip install --quiet --user --break-system-packages uv
  UV=(python3 -m uv)
fi
export UV_PYTHON_DOWNLOADS="${UV_PYTHON_DOWNLOADS:-never}"   # use the machine's Python 3.11+
"${UV[@]}" sync --locked --extra ray --quiet   # the optional `ray` extra: workbench serve/run --ray (docs/scaling.md)
# The rule engine's C parts (chaining/forward/native_trace.c, native_facts.c, rules/native_scan.c, rules/native_read*.c): optional, each rebuilt only
# when its source changed; without a C compiler the engine uses its Python code for them (slower).
.venv/bin/python -m chaining.forward.native_build --quiet || true
