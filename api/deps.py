"""FastAPI dependencies as `Annotated` aliases (one place; routes import these names)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends, Path, Request
from pydantic import AfterValidator

from workbench.config import Settings
from workbench.names import MAX_NAME_LENGTH, NAME_PATTERN, NAME_RULE, check_name
from workbench.serving import Serving

from .auth import require_predict_key, require_write_key


async def get_serving(request: Request) -> Serving:
    """The app's `Serving` (set by `create_app`). The dependencies here are `async def`: FastAPI runs a
    plain `def` dependency on its thread pool, a thread hop per request for one attribute read."""
    return request.app.state.serving


async def get_settings(request: Request) -> Settings:
    """The settings the app was created with."""
    return request.app.state.settings


async def get_workbench(request: Request) -> Any:
    """The `Workbench` facade behind the app."""
    return request.app.state.serving.workbench


ServingDep = Annotated[Serving, Depends(get_serving)]
SettingsDep = Annotated[Settings, Depends(get_settings)]
WorkbenchDep = Annotated[Any, Depends(get_workbench)]
# Use in a route's `dependencies=[...]`.
WRITE_KEY = Depends(require_write_key)
PREDICT_KEY = Depends(require_predict_key)


def _name_param(kind: str) -> Any:
    # The rule is checked by `workbench.names` (one home, shared with the CLI and the store); the
    # pattern is only published in OpenAPI so that clients and schema fuzzers know it.
    return Annotated[
        str,
        Path(
            description=f"The {kind}'s name: {NAME_RULE}.",
            json_schema_extra={"pattern": NAME_PATTERN, "maxLength": MAX_NAME_LENGTH, "minLength": 1},
        ),
        AfterValidator(lambda name: check_name(name, kind)),
    ]


KnowledgeBaseName = _name_param("knowledge base")
PipelineName = _name_param("pipeline")
