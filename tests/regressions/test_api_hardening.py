"""Issue 16, API side: every case of `api_repro.sh` (shared/cases/hardening) against a real uvicorn
server on 127.0.0.1, plus the request limits they called for.

The server runs in a child process (`uvicorn api.app:create_app`), so a crash shows here as a dead
process with its exit status (SIGSEGV: -11) instead of taking the test run down with it.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import time
import zlib
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]
KEY = "k1"
AUTH = {"Authorization": f"Bearer {KEY}"}

LAUNCH = """
import socket, sys, uvicorn
from pathlib import Path
from api.app import create_app
from workbench import Workbench
from workbench.config import load_settings
from workbench.serving import Serving
s = load_settings()
app = create_app(serving=Serving(Workbench(s), settings=s, load_models=False, serve_demo_lm=False), settings=s)
sock = socket.socket()  # a port the system picks, written to argv[1] once listening: no pick-then-bind race
sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
sock.bind(("127.0.0.1", 0))
sock.listen(2048)
Path(sys.argv[1] + ".tmp").write_text(str(sock.getsockname()[1]))
Path(sys.argv[1] + ".tmp").replace(sys.argv[1])
uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning")).run(sockets=[sock])
"""


class Server:
    def __init__(self, tmp: Path, **env: str) -> None:
        kb_dir, pipe_dir = tmp / "knowledge_bases", tmp / "pipelines"
        shutil.copytree(ROOT / "knowledge_bases", kb_dir, ignore=shutil.ignore_patterns("bench"))
        shutil.copytree(ROOT / "pipelines", pipe_dir)
        full_env = {
            **os.environ,
            "WORKBENCH_DATABASE_URL": f"sqlite:///{tmp / 'runs.sqlite3'}",
            "WORKBENCH_KNOWLEDGE_BASE_DIR": str(kb_dir),
            "WORKBENCH_PIPELINE_DIR": str(pipe_dir),
            "WORKBENCH_API_KEYS": KEY,
            **env,
        }
        self.log = open(tmp / "server.log", "w+b")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            [sys.executable, "-c", LAUNCH, str(tmp / "port")], cwd=ROOT, env=full_env, stdout=self.log, stderr=self.log
        )
        deadline = time.monotonic() + 120
        while not (tmp / "port").exists():
            assert self.proc.poll() is None, f"server exited with {self.proc.returncode}: {self.output()}"
            assert time.monotonic() < deadline, "server named no port: " + self.output()
            time.sleep(0.05)
        self.port = int((tmp / "port").read_text())
        self.url = f"http://127.0.0.1:{self.port}"
        while True:
            assert self.proc.poll() is None, f"server exited with {self.proc.returncode}: {self.output()}"
            try:
                if httpx.get(self.url + "/readyz", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "server not ready: " + self.output()
            time.sleep(0.1)

    def output(self) -> str:
        self.log.flush()
        self.log.seek(0)
        return self.log.read().decode(errors="replace")[-3000:]

    def alive(self) -> bool:
        if self.proc.poll() is not None:
            return False
        return httpx.get(self.url + "/healthz", timeout=10).status_code == 200

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[Server]:
    srv = Server(
        tmp_path_factory.mktemp("hardening"), WORKBENCH_LIMITS__ENDPOINTS='{"put_pipeline": {"max_body_bytes": 65536}}'
    )
    yield srv
    srv.stop()


@pytest.fixture()
def client(server: Server) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, timeout=60) as c:
        yield c


def _deep(n: int, field: str = "input") -> bytes:
    return ('{"' + field + '": ' + "[" * n + "]" * n + "}").encode()


def _error(r: httpx.Response) -> dict:
    body = r.json()["error"]
    return body if isinstance(body, dict) else {"message": body}


# ---- api_repro.sh segv / maxdepth ------------------------------------------------------------
def test_segv_huge_max_depth_then_200k_deep_json_leaves_the_server_up(server: Server, client: httpx.Client) -> None:
    # the two requests of api_repro.sh segv (before the fix: exit -11, SIGSEGV, on the second)
    huge = client.post("/v1/kb/family/ask", json={"goal": "(ancestor ?x otto)", "max_depth": 100_000_000})
    try:
        deep = client.post(
            "/v1/pipelines/demo_intents/predict", content=_deep(200_000), headers={"content-type": "application/json"}
        )
    except httpx.TransportError as exc:
        pytest.fail(f"no answer ({exc}); server exit status {server.proc.wait(10)}")
    assert server.alive(), f"server died with {server.proc.returncode}"
    assert huge.status_code == 422, huge.text
    assert _error(huge)["param"] == "body.max_depth" and "1000" in _error(huge)["message"]
    assert deep.status_code == 400, deep.text
    assert "WORKBENCH_LIMITS__MAX_JSON_DEPTH" in _error(deep)["message"] and "200001" in _error(deep)["message"]
    # the deepest proof the API allows, then the deep body again
    assert client.post("/v1/kb/family/ask", json={"goal": "(ancestor ?x otto)", "max_depth": 1000}).status_code == 200
    r = client.post("/v1/kb/family/ask", content=_deep(200_000, "goal"), headers={"content-type": "application/json"})
    assert r.status_code == 400 and server.alive()


def test_maxdepth_103540287695282_is_422_not_500(client: httpx.Client) -> None:
    r = client.post("/v1/kb/family/ask", json={"goal": "(ancestor ?x otto)", "max_depth": 103540287695282})
    assert r.status_code == 422 and _error(r)["code"] == "validation_failed"


# ---- gzip / big: sizes enforced while reading ----------------------------------------------------
def _gzip_of_zeros(mib: int) -> bytes:
    """A valid gzip file of `mib` MiB of zeros, as `gzip.compress` would write it at level 9 but built in
    ~2 s instead of ~30 s (the 2 GiB compressed here took 20-30 s of the suite's time): one MiB deflated
    after a full flush (which resets the compressor, so every further MiB deflates to the same bytes),
    repeated, then the final block and the gzip trailer (CRC-32 and size mod 2**32)."""
    zeros = b"\0" * (1 << 20)
    comp = zlib.compressobj(9, zlib.DEFLATED, -15)
    block = comp.compress(zeros) + comp.flush(zlib.Z_FULL_FLUSH)
    crc = 0
    for _ in range(mib):
        crc = zlib.crc32(zeros, crc)
    header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff"  # deflate, no name, mtime 0, best compression, OS unknown
    final = zlib.compressobj(9, zlib.DEFLATED, -15).flush()  # an empty last block
    return header + block * mib + final + struct.pack("<II", crc, (mib << 20) & 0xFFFFFFFF)


def test_the_bomb_is_the_gzip_of_its_zeros() -> None:
    assert gzip.decompress(_gzip_of_zeros(3)) == b"\0" * (3 << 20)


def test_gzip_bomb_is_413_as_soon_as_the_inflated_limit_is_crossed(server: Server, client: httpx.Client) -> None:
    # 2 GiB of zeros in ~2 MB of gzip (the bomb); the v2 infer limit is 128 MiB inflated
    bomb = _gzip_of_zeros(2048)
    assert len(bomb) < 3 << 20
    r = client.post(
        "/v2/models/demo-digits/infer",
        content=bomb,
        headers={"content-type": "application/json", "content-encoding": "gzip"},
    )
    assert r.status_code == 413, r.text
    assert "WORKBENCH_LIMITS__MAX_DECOMPRESSED_BYTES" in r.json()["error"]
    assert server.alive()


def test_deflate_and_gzip_bodies_within_limits_are_inflated(client: httpx.Client) -> None:
    body = json.dumps({"goal": "(ancestor ?x otto)"}).encode()
    for encoding, data in (("gzip", gzip.compress(body)), ("deflate", zlib.compress(body))):
        r = client.post(
            "/v1/kb/family/ask",
            content=data,
            headers={"content-type": "application/json", "content-encoding": encoding},
        )
        assert r.status_code == 200, (encoding, r.text)
        assert r.json()["proved"] is True
    r = client.post(
        "/v1/kb/family/ask", content=body, headers={"content-type": "application/json", "content-encoding": "br"}
    )
    assert r.status_code == 415


def test_declared_content_length_over_the_limit_is_413_before_the_body_is_read(server: Server) -> None:
    # Content-Length says 100 MB; only the headers are sent: the answer must come without the body.
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as s:
        s.sendall(
            b"POST /v1/pipelines/demo_intents/predict HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: 104857600\r\n\r\n"
        )
        answer = b""
        while b"}}" not in answer:  # the JSON error body ends with }}
            chunk = s.recv(65536)
            if not chunk:
                break
            answer += chunk
    text = answer.decode("latin-1")
    assert text.startswith("HTTP/1.1 413"), text[:200]
    assert "WORKBENCH_LIMITS__MAX_BODY_BYTES" in text


def test_chunked_body_without_length_is_cut_at_the_limit(client: httpx.Client) -> None:
    def chunks() -> Iterator[bytes]:
        yield b'{"input": {"text": "'
        for _ in range(64):  # 8 MiB in 128 KiB chunks, over the 4 MiB default
            yield b"a" * (128 << 10)
        yield b'"}}'

    r = client.post(
        "/v1/pipelines/demo_intents/predict", content=chunks(), headers={"content-type": "application/json"}
    )
    assert r.status_code == 413, r.text
    assert "4194304" in _error(r)["message"]


def test_per_endpoint_limit_from_settings(client: httpx.Client) -> None:
    # the fixture's server sets WORKBENCH_LIMITS__ENDPOINTS={"put_pipeline": {"max_body_bytes": 65536}}
    doc = "name: x\ndescription: " + "d" * 70_000 + "\nnodes: []\n"
    r = client.put("/v1/pipelines/x", content=doc, headers={**AUTH, "content-type": "application/yaml"})
    assert r.status_code == 413 and "put_pipeline" in _error(r)["message"]
    # the same size is fine on an endpoint with the default limit (refused later, as rules)
    r = client.put("/v1/kb/x", content="; " + "d" * 70_000 + "\n", headers={**AUTH, "content-type": "text/plain"})
    assert r.status_code != 413


def test_big_input_runs_list_stays_small(client: httpx.Client) -> None:
    r = client.get("/v1/runs", params={"limit": 5})
    assert r.status_code == 200
    for run in r.json()["runs"]:
        assert "inputs" not in run and "outputs" not in run and "explanation" not in run


# ---- deepjson / nonutf8 / surrogate -------------------------------------------------------------
@pytest.mark.parametrize(
    ("method", "path", "headers"),
    [("PUT", "/v1/kb/deepkb", AUTH), ("POST", "/v2/models/demo-digits/infer", {})],
)
def test_deepjson_10000_is_400_naming_the_limit(client: httpx.Client, method: str, path: str, headers: dict) -> None:
    r = client.request(
        method, path, content=_deep(10_000, "text"), headers={**headers, "content-type": "application/json"}
    )
    assert r.status_code == 400, r.text
    assert "the limit is 64" in _error(r)["message"]


@pytest.mark.parametrize("path", ["/v1/kb/x", "/v1/pipelines/x"])
def test_nonutf8_json_is_400_naming_the_byte(client: httpx.Client, path: str) -> None:
    r = client.put(path, content=b"5\xff\xfe", headers={**AUTH, "content-type": "application/json"})
    assert r.status_code == 400, r.text
    assert "not UTF-8" in _error(r)["message"] and "offset 1" in _error(r)["message"]
    assert _error(r)["param"] == "body"


def test_surrogate_escape_in_a_pipeline_yaml_key_is_422(client: httpx.Client) -> None:
    doc = b'"\\ud903\\ude01": 1\nname: x\nnodes: []\n'
    r = client.put("/v1/pipelines/x", content=doc, headers={**AUTH, "content-type": "application/yaml"})
    assert r.status_code == 422, r.text
    assert "line 1, column 2" in _error(r)["message"]


def test_lone_surrogate_in_json_is_422_naming_the_field(client: httpx.Client) -> None:
    body = b'{"input": {"text": "ok", "notes": ["fine", "bad \\ud800 here"]}}'
    r = client.post("/v1/pipelines/demo_intents/predict", content=body, headers={"content-type": "application/json"})
    assert r.status_code == 422, r.text
    assert _error(r)["param"] == "body.input.notes[1]"
    # a proper pair is one character (U+1F600) and passes
    ok = b'{"text": "; smile \\ud83d\\ude00\\n(deftemplate z (slot a))"}'
    r = client.put("/v1/kb/pair", content=ok, headers={**AUTH, "content-type": "application/json"})
    assert r.status_code in (200, 201), r.text
    assert "\U0001f600" in client.get("/v1/kb/pair").json()["sources"][0]["text"]


def test_nul_character_in_json_is_422_naming_the_field(client: httpx.Client) -> None:
    # CLIPS strings end at a NUL: the rule fact read "(text \"\")" (blocked as empty) while the model
    # saw the whole text; PostgreSQL cannot store it either. Refused at the door, naming the field.
    for text in ("\\u0000abc", "ab\\u0000cd"):
        body = b'{"input": {"text": "' + text.encode() + b'"}}'
        r = client.post(
            "/v1/pipelines/demo_intents/predict", content=body, headers={"content-type": "application/json"}
        )
        assert r.status_code == 422, r.text
        assert _error(r)["param"] == "body.input.text"
        assert "NUL" in _error(r)["message"]
    # an escaped backslash followed by the text u0000 is not a NUL character: it runs
    body = b'{"input": {"text": "hello \\\\u0000 there"}}'
    r = client.post("/v1/pipelines/demo_intents/predict", content=body, headers={"content-type": "application/json"})
    assert r.status_code == 200, r.text


# ---- names --------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("name", "reason"),
    [("a" * 300, "300 characters"), ("x.clp", "no file extension"), ("a%5C..%5Cb", "path separators")],
)
def test_bad_knowledge_base_names_are_422_stating_the_rule(client: httpx.Client, name: str, reason: str) -> None:
    r = client.put(f"/v1/kb/{name}", content="(deftemplate z (slot a))", headers={**AUTH, "content-type": "text/plain"})
    assert r.status_code == 422, r.text
    msg = _error(r)["message"]
    assert reason in msg and "ASCII letters, digits, '_' and '-'" in msg


def test_pipeline_names_follow_the_same_rule(client: httpx.Client) -> None:
    r = client.get("/v1/pipelines/" + "p" * 65)
    assert r.status_code == 422 and "more than 64" in _error(r)["message"]


# ---- status codes as documented ------------------------------------------------------------------
def test_runaway_knowledge_base_is_504_timeout(client: httpx.Client) -> None:
    rules = (
        "(deftemplate n (slot v)) (deffacts s (n (v 0)))\n"
        "(defrule step ?f <- (n (v ?x)) => (retract ?f) (assert (n (v (+ ?x 1)))))\n"
    )
    assert client.put("/v1/kb/loop", content=rules, headers={**AUTH, "content-type": "text/plain"}).status_code in (
        200,
        201,
    )
    r = client.post("/v1/kb/loop/run", json={"timeout_s": 0.5, "max_firings": 100_000_000})
    assert r.status_code == 504, r.text
    assert _error(r)["code"] == "timeout"
    r = client.post("/v1/kb/loop/run", json={"max_firings": 10})
    assert r.status_code == 422 and _error(r)["code"] == "limit_exceeded"
