"""One router per resource, gathered here in the order they appear in the OpenAPI document."""

from __future__ import annotations

from . import health, kserve, openai

ROUTERS = [health.router, openai.router, kserve.router]
