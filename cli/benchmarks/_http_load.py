"""A lean HTTP/1.1 load generator for `workbench bench api`: raw asyncio streams, keep-alive,
pre-encoded requests, `Content-Length` framed answers.

Why not httpx: on this 2-core machine the client shares the cores with the servers it measures,
and httpx's per-request Python (its connection pool, header models, h11 state machine) cost more
CPU than the model-only server itself: measured at concurrency 64, httpx reached ~115 requests/s
against `model_only` while this client reaches several times that (docs/serving.md). A client that
eats the cores measures itself. This one spends a few tens of microseconds per request.

Two drivers:

- `closed_loop`: C connections, each sends its next request as soon as its previous answer is read
  (what `wrk` / `hey -c` do);
- `open_loop`: requests start at a fixed arrival rate whatever the answers (a new connection is
  opened when every idle one is busy, as a real crowd of clients would), so a slow server sees
  its queue grow instead of the client slowing down (no coordinated omission).

Both answer with `Sample`s: latency from writing the request to reading the whole answer, the
status (0: transport error: refused, reset or closed without an answer) and the answer's
`Retry-After` header when there was one; open loop also how late the client wrote each request
(its own lag, including any wait for a connection: when that grows, the client, not the server,
is the bottleneck) and how long opening its connection took (None on a reused one). A connection
returns `connect` as soon as the kernel completed the handshake, before the server `accept`s it:
a request on a new connection that the server is slow to accept waits in the kernel, and shows
as a long time between writing and the answer.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit


@dataclass(slots=True)
class Sample:
    """One request: `latency_s` (seconds), `status` (0 = transport error), `retry_after` (header
    text or None), `body` (the answer's bytes when kept)."""

    latency_s: float
    status: int
    retry_after: str | None = None
    body: bytes | None = None
    send_late_s: float = 0.0  # open loop: how long after its scheduled time the request was written
    connect_s: float | None = None  # open loop: seconds to open the connection it went on; None when reused


def encode_requests(url: str, method: str, path: str, bodies: list[Any]) -> list[bytes]:
    """The raw HTTP/1.1 requests (JSON bodies, keep-alive) for `bodies`, encoded once. A path in
    `url` (an application behind a route prefix, e.g. Ray Serve's `/r1`) goes before `path`."""
    parts = urlsplit(url)
    host = parts.netloc
    path = parts.path.rstrip("/") + path
    out = []
    for b in bodies:
        data = json.dumps(b, separators=(",", ":")).encode()
        head = (
            f"{method} {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(data)}\r\nConnection: keep-alive\r\n\r\n"
        )
        out.append(head.encode() + data)
    return out


async def _exchange(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, raw: bytes
) -> tuple[int, str | None, bytes]:
    """Send one request and read its answer. Raises ConnectionError / asyncio.IncompleteReadError."""
    writer.write(raw)
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    status = int(lines[0].split(b" ", 2)[1])
    length, retry_after, close = None, None, False
    for line in lines[1:]:
        k, _, v = line.partition(b":")
        k = k.strip().lower()
        if k == b"content-length":
            length = int(v)
        elif k == b"retry-after":
            retry_after = v.strip().decode()
        elif k == b"connection" and v.strip().lower() == b"close":
            close = True
        elif k == b"transfer-encoding":
            raise ConnectionError("chunked answers are not supported by this load generator")
    body = await reader.readexactly(length) if length else b""
    if close:
        raise _Closed(status, retry_after, body)
    return status, retry_after, body


class _Closed(Exception):
    """The server answered and closed the connection (`Connection: close`): the answer counts."""

    def __init__(self, status: int, retry_after: str | None, body: bytes):
        super().__init__(status)
        self.answer = (status, retry_after, body)


KEEPALIVE_EXPIRY_S = 4.0  # open loop: an idle connection older than this is not reused (uvicorn closes at 5 s)


async def _connect(url: str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    u = urlsplit(url)
    return await asyncio.open_connection(u.hostname, u.port, limit=1 << 22)


async def closed_loop(
    url: str, requests: list[bytes], concurrency: int, duration_s: float, keep_bodies: bool = False
) -> tuple[list[Sample], float]:
    """`concurrency` connections, each sending back to back for `duration_s` seconds (requests in
    flight at the deadline finish and count). Returns (samples, wall seconds)."""
    samples: list[Sample] = []
    deadline = time.perf_counter() + duration_s
    counter = iter(range(1 << 62))

    async def worker() -> None:
        conn = None
        while time.perf_counter() < deadline:
            raw = requests[next(counter) % len(requests)]
            t0 = time.perf_counter()
            try:
                if conn is None:
                    conn = await _connect(url)
                status, ra, body = await _exchange(*conn, raw)
            except _Closed as c:
                status, ra, body = c.answer
                conn[1].close()
                conn = None
            except (OSError, asyncio.IncompleteReadError, ValueError):
                status, ra, body = 0, None, b""
                if conn is not None:
                    conn[1].close()
                conn = None
            samples.append(Sample(time.perf_counter() - t0, status, ra, body if keep_bodies else None))
        if conn is not None:
            conn[1].close()

    t0 = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return samples, time.perf_counter() - t0


async def open_loop(
    url: str, requests: list[bytes], rate: float, duration_s: float, max_connections: int = 2048
) -> tuple[list[Sample], float, int]:
    """Start requests at `rate` per second for `duration_s` seconds, whatever the answers.

    A request goes out on an idle keep-alive connection, or on a new one when all are busy (at most
    `max_connections`; past that the request waits for a connection and its latency includes the
    wait, so the rate is never silently lowered). Returns (samples, seconds the sending took, the
    most connections open at once)."""
    samples: list[Sample] = []
    idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter, float]] = []  # (..., idle since)
    opened = 0
    peak = 0
    slots = asyncio.Semaphore(max_connections)

    def reuse() -> tuple[asyncio.StreamReader, asyncio.StreamWriter] | None:
        """The most recently used idle connection that is still good, or None. Connections idle for
        `KEEPALIVE_EXPIRY_S` or more, or that the server has closed, are closed unused, as httpx's pool
        does (`keepalive_expiry`): uvicorn closes a connection idle for 5 s, and a request written
        just as the server closes it is lost (seen as a transport error, the server never read it)."""
        nonlocal opened
        now = time.perf_counter()
        while idle:
            reader, writer, since = idle.pop()
            if now - since < KEEPALIVE_EXPIRY_S and not reader.at_eof() and not writer.is_closing():
                return reader, writer
            writer.close()
            opened -= 1
        return None

    async def one(raw: bytes, t0: float) -> None:
        nonlocal opened, peak
        late = 0.0
        connect_s = None
        async with slots:
            conn = reuse()
            try:
                if conn is None:
                    opened += 1
                    peak = max(peak, opened)
                    c0 = time.perf_counter()
                    conn = await _connect(url)
                    connect_s = time.perf_counter() - c0
                late = time.perf_counter() - t0
                status, ra, _ = await _exchange(*conn, raw)
                idle.append((*conn, time.perf_counter()))
            except _Closed as c:
                status, ra, _ = c.answer
                conn[1].close()
                opened -= 1
            except (OSError, asyncio.IncompleteReadError, ValueError):
                status, ra = 0, None
                if conn is not None:
                    conn[1].close()
                opened -= 1
        samples.append(Sample(time.perf_counter() - t0, status, ra, send_late_s=late, connect_s=connect_s))

    tasks: list[asyncio.Task] = []
    start = time.perf_counter()
    i = 0
    while (now := time.perf_counter() - start) < duration_s:
        due = int(now * rate) + 1
        while i < due:  # the scheduled start time, so a late tick does not hide latency
            tasks.append(asyncio.ensure_future(one(requests[i % len(requests)], start + i / rate)))
            i += 1
        await asyncio.sleep(max(0.0, min(0.002, (i / rate) - (time.perf_counter() - start))))
    sent_s = time.perf_counter() - start
    await asyncio.gather(*tasks)
    for _, w, _ in idle:
        w.close()
    return samples, sent_s, peak
