#!/usr/bin/env bash
# The README's test command: set up the locked environment, lint (ruff check, ruff format --check),
# then run the whole test suite. A lint finding fails the command before pytest starts.
# Extra arguments go to pytest (e.g. `bash scripts/test.sh tests/rules -x`).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
.venv/bin/ruff check .
.venv/bin/ruff format --check .
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
exec .venv/bin/python -m pytest -q -rs -p no:cacheprovider "$@"
