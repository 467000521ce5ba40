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
    rule_files,
    runs,
)

ROUTERS = [
    pipelines.router,
    runs.router,
    replay.router,
    kb.router,
    rule_files.scenarios,
    rule_files.tables,
    consultations.router,
    checks.router,
    model_admin.router,
    openai.router,
    kserve.router,
    kserve_generate.router,
    health.router,
]
