"""`workbench serve`'s uvicorn options accept every pending connection at once.

Regression (issue 14, 3x overload of demo_digits): with uvloop (uvicorn's default when installed),
the server accepted one connection per event-loop iteration (strace: one `accept4` per
`epoll_pwait`); with the run pool's threads holding the GIL an iteration took ~0.1 s, so ~1,700
connections of the overload waited 20-30 s in the kernel's accept queue and admitted requests
were answered after up to 35 s. The test counts loop iterations (a task that yields once per
iteration) and checks that requests waiting on 64 new connections while the loop was busy all
reach the app within a few iterations of each other.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time

import uvicorn

from cli.serve import uvicorn_options
from workbench.config import Settings

N = 64


class _App:
    """ASGI app: `/block` holds the event loop until `release` is set; any other path records the
    loop iteration it reached the app in."""

    def __init__(self) -> None:
        self.iteration = 0
        self.seen: list[int] = []
        self.blocked = threading.Event()
        self.release = threading.Event()

    async def _count(self) -> None:
        while True:
            self.iteration += 1
            await asyncio.sleep(0)  # resumes at the next loop iteration

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "lifespan":
            while True:
                msg = await receive()
                if msg["type"] == "lifespan.startup":
                    self._counter = asyncio.get_running_loop().create_task(self._count())
                    await send({"type": "lifespan.startup.complete"})
                elif msg["type"] == "lifespan.shutdown":
                    self._counter.cancel()
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if scope["path"] == "/block":
            self.blocked.set()
            self.release.wait(60)  # the whole loop waits, as it does behind a busy GIL
        else:
            self.seen.append(self.iteration)
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
        await send({"type": "http.response.body", "body": b"ok"})


def _request(sock: socket.socket, path: str) -> None:
    sock.sendall(f"GET {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n".encode())


def _answer(sock: socket.socket) -> bytes:
    data = b""
    while chunk := sock.recv(4096):
        data += chunk
    return data


def test_connections_waiting_while_the_loop_was_busy_are_accepted_together():
    options = uvicorn_options(Settings())
    assert options["loop"] == "asyncio"
    app = _App()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", **options))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    socks: list[socket.socket] = []
    try:
        deadline = time.monotonic() + 30
        while not server.started and time.monotonic() < deadline:
            time.sleep(0.05)
        blocker = socket.create_connection(("127.0.0.1", port), timeout=60)
        socks.append(blocker)
        _request(blocker, "/block")
        assert app.blocked.wait(30)
        for _ in range(N):  # the kernel completes these handshakes; the busy loop accepts none yet
            c = socket.create_connection(("127.0.0.1", port), timeout=60)
            socks.append(c)
            _request(c, "/x")
        app.release.set()
        answers = [_answer(c) for c in socks]
        assert all(a.startswith(b"HTTP/1.1 200") for a in answers)
        assert len(app.seen) == N
        # all 64 reached the app within a few iterations (uvloop: one accept per iteration, >= 64 apart)
        assert max(app.seen) - min(app.seen) < 8, sorted(app.seen)
    finally:
        app.release.set()
        for c in socks:
            c.close()
        server.should_exit = True
        thread.join(10)
