"""A server process for tests that must not share the test's interpreter (its GIL): uvicorn on
127.0.0.1:PORT serving `create_app` over a registry with MiniLM as `minilm`.

Usage: python tests/api/minilm_server.py PORT DATABASE_FILE
"""

from __future__ import annotations

import sys

import uvicorn

from api.app import create_app
from neural.batching import BatcherConfig
from neural.minilm import register_minilm
from neural.registry import ModelRegistry
from workbench.config import load_settings
from workbench.serving import Serving


def main() -> None:
    port, db = int(sys.argv[1]), sys.argv[2]
    settings = load_settings(database_url=f"sqlite:///{db}")
    reg = ModelRegistry()
    register_minilm(reg, name="minilm", batcher_config=BatcherConfig(max_batch_size=16, max_queue_delay_ms=2))
    app = create_app(serving=Serving(settings=settings, registry=reg), settings=settings)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    main()
