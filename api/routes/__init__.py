"""One router per resource, gathered here in the order they appear in the OpenAPI document."""

from __future__ import annotations

from . import health, kb, kserve, kserve_generate, openai, pipelines, runs

ROUTERS = [
    pipelines.router,
    runs.router,
    kb.router,
    openai.router,
    kserve.router,
    kserve_generate.router,
    health.router,
]
