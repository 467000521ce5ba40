"""One router per resource, gathered here in the order they appear in the OpenAPI document."""

from __future__ import annotations

from . import (
    checks,
    consultations,
    health,
    kb,
    kserve,
    kserve_generate,
    model_admin,
    openai,
    pipelines,
    replay,
    runs,
)

ROUTERS = [
    pipelines.router,
    runs.router,
    replay.router,
    kb.router,
    consultations.router,
    checks.router,
    model_admin.router,
    openai.router,
    kserve.router,
    kserve_generate.router,
    health.router,
]
