"""HTTP metrics (Prometheus) as a pure ASGI middleware, so streaming responses pass untouched.

Labels use the route's path template (`/v1/pipelines/{name}/predict`), never the raw path, so
the number of series stays bounded; requests that match no route are counted as `<unmatched>`.
Duration is measured until the last body byte is sent (for SSE: the end of the stream).
"""

from __future__ import annotations

import time
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from starlette.types import ASGIApp, Message, Receive, Scope, Send

_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


class HttpMetrics:
    """The HTTP metric families on their own registry (one per app)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.requests = Counter(
            "workbench_http_requests",
            "HTTP requests answered, by method, route template and status.",
            ["method", "route", "status"],
            registry=self.registry,
        )
        self.duration = Histogram(
            "workbench_http_request_duration_seconds",
            "Time from request start to the last response byte.",
            ["method", "route"],
            buckets=_BUCKETS,
            registry=self.registry,
        )
        self.in_flight = Gauge(
            "workbench_http_requests_in_flight",
            "HTTP requests being handled.",
            registry=self.registry,
            multiprocess_mode="livesum",
        )


class HttpMetricsMiddleware:
    """Count requests and time them; the route label is read from `scope["route"]` after routing."""

    def __init__(self, app: ASGIApp, metrics: HttpMetrics) -> None:
        self.app = app
        self.metrics = metrics
        # (method, route, status) -> its (requests, duration) children: `labels` takes the metric's lock
        # and builds its key on every call. Never removed from these metrics, so a cached child stays live.
        self._children: dict[tuple[str, str, str], tuple[Any, Any]] = {}

    def _series(self, method: str, route: str, status: str) -> tuple[Any, Any]:
        key = (method, route, status)
        c = self._children.get(key)
        if c is None:
            if len(self._children) > 4096:  # bounded: the method comes from the client
                self._children.clear()
            m = self.metrics
            c = self._children[key] = (m.requests.labels(method, route, status), m.duration.labels(method, route))
        return c

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        status = {"code": 500}

        async def send_wrapper(message: Message) -> None:
            if message["type"] == "http.response.start":
                status["code"] = message["status"]
            await send(message)

        self.metrics.in_flight.inc()
        try:
            await self.app(scope, receive, send_wrapper)
        finally:
            self.metrics.in_flight.dec()
            requests, duration = self._series(scope.get("method", ""), _route_of(scope), str(status["code"]))
            requests.inc()
            duration.observe(time.perf_counter() - start)


def _route_of(scope: dict[str, Any]) -> str:
    route = scope.get("route")
    path = getattr(route, "path", None)
    return path if isinstance(path, str) else "<unmatched>"
