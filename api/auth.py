"""Bearer-key authentication (issue 8 item 7).

When `WORKBENCH_API_KEYS` lists keys, mutating endpoints (create, update, delete, upload)
require `Authorization: Bearer <key>`; with `WORKBENCH_REQUIRE_KEY_FOR_PREDICT=true` prediction,
inference and generation endpoints require it too. With no keys configured, nothing is required.
Keys are compared in constant time.
"""

from __future__ import annotations

import hmac

from fastapi import Request

from workbench.config import Settings

from .errors import ApiError


def _check(request: Request, settings: Settings) -> None:
    keys = settings.api_keys
    if not keys:
        return
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    challenge = {"WWW-Authenticate": 'Bearer realm="workbench"'}
    if scheme.lower() != "bearer" or not token.strip():
        raise ApiError(
            401,
            "this endpoint requires 'Authorization: Bearer <key>' (WORKBENCH_API_KEYS is set)",
            code="unauthorized",
            headers=challenge,
        )
    token = token.strip().encode()
    if not any(hmac.compare_digest(token, k.encode()) for k in keys):
        raise ApiError(401, "the bearer key is not one of WORKBENCH_API_KEYS", code="unauthorized", headers=challenge)


async def require_write_key(request: Request) -> None:
    """Dependency of mutating endpoints. Raises ApiError(401) when keys are set and none matches.

    `async def` like every dependency here: FastAPI runs a plain `def` dependency on its thread
    pool, a thread hop per request for a few attribute reads."""
    _check(request, request.app.state.settings)


async def require_predict_key(request: Request) -> None:
    """Dependency of predict/infer/generate endpoints: checks only when `require_key_for_predict`."""
    settings: Settings = request.app.state.settings
    if settings.require_key_for_predict:
        _check(request, settings)
