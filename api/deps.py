"""FastAPI dependencies as `Annotated` aliases (one place; routes import these names)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends, Request

from workbench.config import Settings
from workbench.serving import Serving

from .auth import require_predict_key, require_write_key


def get_serving(request: Request) -> Serving:
    """The app's `Serving` (set by `create_app`)."""
    return request.app.state.serving


def get_settings(request: Request) -> Settings:
    """The settings the app was created with."""
    return request.app.state.settings


def get_workbench(request: Request) -> Any:
    """The `Workbench` facade behind the app."""
    return request.app.state.serving.workbench


ServingDep = Annotated[Serving, Depends(get_serving)]
SettingsDep = Annotated[Settings, Depends(get_settings)]
WorkbenchDep = Annotated[Any, Depends(get_workbench)]
# Use in a route's `dependencies=[...]`.
WRITE_KEY = Depends(require_write_key)
PREDICT_KEY = Depends(require_predict_key)
