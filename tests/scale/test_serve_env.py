"""Ray Serve's environment from the settings: `serve_env` goes to the controller `deploy` starts (its proxies
and replicas inherit it), `pipelines_env` to each pipeline replica; both default to Ray's own settings
(measured in docs/scaling.md). (That they reach the processes is checked on the two-node cluster in
test_multinode.py.)"""

from __future__ import annotations

import pytest

from workbench.config import RaySettings, Settings

pytest.importorskip("ray", reason="the optional extra `ray` is not installed (uv sync --extra ray)")


def test_defaults_are_rays_own():
    """The gRPC proxy and the app on the replica's main loop cut CPU per request in a constant-answer app,
    but made two `demo_digits` replicas slower in `bench api --ray local` (docs/scaling.md): not defaults."""
    rs = RaySettings()
    assert rs.serve_env == {} and rs.pipelines_env == {}


def test_pipelines_env_becomes_the_replicas_runtime_env_with_their_own_router_loop(monkeypatch):
    from workbench.scale.serve_app import build_application

    def options(settings):
        app = build_application(settings, app=lambda **kw: None, models=[], lms=[])
        return app._bound_deployment.ray_actor_options

    router = {"RAY_SERVE_RUN_ROUTER_IN_SEPARATE_LOOP": "1"}  # handles called from worker threads need it
    opts = options(Settings(ray=RaySettings(pipelines_env={"RAY_SERVE_RUN_USER_CODE_IN_SEPARATE_THREAD": "1"})))
    assert opts["runtime_env"] == {"env_vars": {"RAY_SERVE_RUN_USER_CODE_IN_SEPARATE_THREAD": "1", **router}}
    assert options(Settings(ray=RaySettings(pipelines_env={})))["runtime_env"] == {"env_vars": router}
    monkeypatch.setenv("WORKBENCH_RAY__SERVE_ENV", '{"RAY_SERVE_REQUEST_PATH_LOG_BUFFER_SIZE": "100"}')
    assert Settings().ray.serve_env == {"RAY_SERVE_REQUEST_PATH_LOG_BUFFER_SIZE": "100"}
