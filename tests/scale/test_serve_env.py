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


def test_the_ingress_decides_the_controllers_environment():
    """`haproxy` (the default): Serve's HAProxy mode with the binary wrapped by haproxy_exec.sh and no Python
    proxy middleware; `serve_proxy`: the middleware. `serve_env` is added to either."""
    from workbench.scale.haproxy import EXEC_SCRIPT
    from workbench.scale.serve_app import ingress_env

    token = "t0ken-of-the-instance"
    assert RaySettings().ingress == "haproxy"
    hap = ingress_env(Settings(ray=RaySettings(retries=3, serve_env={"RAY_SERVE_X": "1"})), token)
    assert hap["RAY_SERVE_ENABLE_HA_PROXY"] == "1" and hap["RAY_SERVE_X"] == "1"
    assert hap["RAY_SERVE_HAPROXY_BINARY_PATH"] == str(EXEC_SCRIPT) and EXEC_SCRIPT.stat().st_mode & 0o111
    assert (
        hap["RAY_SERVE_HAPROXY_RETRY_ON"] == "conn-failure empty-response" and hap["RAY_SERVE_HAPROXY_RETRIES"] == "3"
    )
    assert hap["WORKBENCH_RAY_PROXY_TOKEN"] == token and "RAY_SERVE_HTTP_PROXY_CALLBACK_IMPORT_PATH" not in hap
    proxy = ingress_env(Settings(ray=RaySettings(ingress="serve_proxy", serve_env={"RAY_SERVE_X": "1"})), token)
    assert proxy["RAY_SERVE_HTTP_PROXY_CALLBACK_IMPORT_PATH"] == "workbench.scale.proxy:middlewares"
    assert "RAY_SERVE_ENABLE_HA_PROXY" not in proxy and proxy["RAY_SERVE_X"] == "1"


def test_the_controller_waits_30_s_for_a_proxy_unless_serve_env_says_otherwise():
    """Ray's 5 s readiness check killed the proxy of `deploy` on a busy machine until `serve.start` gave up
    (ActorDiedError, 4 of 4 tries at load average 6-17); the controller gets 30 s, for either ingress, and a
    value in `serve_env` wins."""
    from workbench.scale.serve_app import ingress_env

    key = "RAY_SERVE_PROXY_READY_CHECK_TIMEOUT_S"
    for ingress in ("haproxy", "serve_proxy"):
        assert ingress_env(Settings(ray=RaySettings(ingress=ingress)), "t0ken-of-it")[key] == "30"
        assert ingress_env(Settings(ray=RaySettings(ingress=ingress, serve_env={key: "7"})), "t0ken-of-it")[key] == "7"
