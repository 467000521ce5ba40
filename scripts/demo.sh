#!/usr/bin/env bash
# The README's main command: set up the locked environment, then run the demo on real input.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
exec .venv/bin/workbench demo "$@"
