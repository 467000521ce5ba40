"""A server process for tests that must not share the test's interpreter (its GIL): uvicorn on
127.0.0.1 serving `create_app` over a registry with MiniLM as `minilm`.

Usage: python tests/api/minilm_server.py FOLDER DATABASE_FILE

The server binds a port the system picks (port 0, so no other process can take it between a choice
and the bind) and writes it to FOLDER/port once listening. A text longer than `HOLD_CHARS` is held
in the tokeniser: the server writes FOLDER/tokenising when it starts tokenising one and goes on once
FOLDER/release exists, so a test can probe the server while it is certainly tokenising.
"""

from __future__ import annotations

import socket
import sys
import time
from pathlib import Path

import uvicorn

from api.app import create_app
from neural.batching import BatcherConfig
from neural.minilm import register_minilm
from neural.registry import ModelRegistry
from workbench.config import load_settings
from workbench.serving import Serving

HOLD_CHARS = 1 << 20
HOLD_LIMIT_S = 300.0  # a test that never releases the tokeniser ends the hold here


def hold_long_texts(runner, folder: Path) -> None:
    """Wrap `runner.prepare` (tokenisation) so that a long text waits for FOLDER/release."""
    prepare = runner.prepare

    def held(text):
        if isinstance(text, str) and len(text) > HOLD_CHARS:
            (folder / "tokenising").touch()
            deadline = time.monotonic() + HOLD_LIMIT_S
            while not (folder / "release").exists() and time.monotonic() < deadline:
                time.sleep(0.01)
        return prepare(text)

    runner.prepare = held


def main() -> None:
    folder, db = Path(sys.argv[1]), sys.argv[2]
    settings = load_settings(database_url=f"sqlite:///{db}")
    reg = ModelRegistry()
    entry = register_minilm(reg, name="minilm", batcher_config=BatcherConfig(max_batch_size=16, max_queue_delay_ms=2))
    hold_long_texts(entry.runner, folder)
    app = create_app(serving=Serving(settings=settings, registry=reg), settings=settings)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))
    sock.listen(2048)  # connections made once the port is known wait in the backlog until uvicorn accepts them
    (folder / "port.tmp").write_text(str(sock.getsockname()[1]))
    (folder / "port.tmp").replace(folder / "port")
    server.run(sockets=[sock])


if __name__ == "__main__":
    main()
