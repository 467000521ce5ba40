"""The pieces behind the request limits, without a server: depth counting, streaming inflate,
surrogate paths, the name rule, cursors, and the limits settings."""

from __future__ import annotations

import gzip
import json
import zlib
from collections.abc import Callable

import pytest

from api import paging
from api.body_checks import BodyError, Inflater, check_json, json_depth, lone_surrogate_path, nul_path
from api.errors import ApiError
from workbench.config import load_settings
from workbench.names import InvalidNameError, check_name


@pytest.mark.parametrize(
    ("text", "depth"),
    [
        ("1", 0),
        ("[]", 1),
        ('{"a": [1, {"b": []}]}', 4),
        ('{"a": "[[[[[[ not brackets ]"}', 1),
        ('["\\"[[[", "\\\\", [[]]]', 3),  # escaped quote and escaped backslash inside strings
        ("[" * 5000 + "]" * 5000, 5000),
    ],
)
def test_json_depth_ignores_brackets_in_strings(text: str, depth: int) -> None:
    assert json_depth(text.encode()) == depth
    if depth < 900:
        assert depth == _python_depth(json.loads(text))


def _python_depth(v) -> int:
    if isinstance(v, dict):
        return 1 + max((_python_depth(x) for x in v.values()), default=0)
    if isinstance(v, list):
        return 1 + max((_python_depth(x) for x in v), default=0)
    return 0


def test_json_depth_of_200k_deep_array_without_recursion() -> None:
    n = 200_000
    assert json_depth(b"[" * n + b"]" * n) == n


def test_check_json_names_the_limit_and_the_setting() -> None:
    with pytest.raises(BodyError) as e:
        check_json(b'{"a": ' + b"[" * 65 + b"]" * 65 + b"}", 64, "WORKBENCH_LIMITS__MAX_JSON_DEPTH")
    assert (
        e.value.status == 400
        and "66 levels" in e.value.message
        and "WORKBENCH_LIMITS__MAX_JSON_DEPTH" in e.value.message
    )
    check_json(b'{"a": ' + b"[" * 63 + b"]" * 63 + b"}", 64, "x")  # 64 levels: allowed


def test_check_json_refuses_non_utf8_with_offset() -> None:
    with pytest.raises(BodyError) as e:
        check_json(b'{"a": "\xc3("}', 64, "x")
    assert e.value.status == 400 and "offset 7" in e.value.message


@pytest.mark.parametrize(
    ("find", "body", "path"),
    [
        (lone_surrogate_path, b'{"a": "\\ud800"}', "body.a"),
        (lone_surrogate_path, b'{"a": [1, {"b": "x\\udc00y"}]}', "body.a[1].b"),
        (lone_surrogate_path, b'{"\\udbff": 1}', "body.\\udbff"),
        (lone_surrogate_path, b'["ok \\ud83d\\ude00", "\\\\ud800 is text, not an escape"]', None),
        (nul_path, b'{"a": "\\u0000"}', "body.a"),
        (nul_path, b'{"a": [1, {"b": "x\\u0000y"}]}', "body.a[1].b"),
        (nul_path, b'{"k\\u0000": 1}', "body.k\\u0000"),
        (nul_path, b'["\\\\u0000 is text, not an escape"]', None),
    ],
)
def test_refused_characters_are_found_with_their_path(find: Callable, body: bytes, path: str | None) -> None:
    # lone surrogate escapes and NUL characters: found with their field path, refused with 422
    assert find(json.loads(body)) == path
    if path is None:
        check_json(body, 64, "x")
    else:
        with pytest.raises(BodyError) as e:
            check_json(body, 64, "x")
        assert e.value.status == 422 and e.value.param == path


@pytest.mark.parametrize("encoding", ["gzip", "deflate", "raw-deflate"])
def test_inflater_streams_in_small_chunks(encoding: str) -> None:
    data = json.dumps({"x": list(range(5000))}).encode()
    if encoding == "gzip":
        packed = gzip.compress(data)
    elif encoding == "deflate":
        packed = zlib.compress(data)
    else:
        c = zlib.compressobj(6, zlib.DEFLATED, -15)
        packed = c.compress(data) + c.flush()
    inf = Inflater("gzip" if encoding == "gzip" else "deflate", len(data), "S")
    for i in range(0, len(packed), 7):
        inf.feed(packed[i : i + 7])
    assert inf.finish() == data


def test_inflater_stops_at_the_limit_without_inflating_the_rest() -> None:
    comp = zlib.compressobj(9, zlib.DEFLATED, 31)
    bomb = b"".join(comp.compress(b"\0" * (1 << 20)) for _ in range(512)) + comp.flush()  # 512 MiB inflated
    inf = Inflater("gzip", 1 << 20, "WORKBENCH_LIMITS__MAX_DECOMPRESSED_BYTES")
    with pytest.raises(BodyError) as e:
        inf.feed(bomb)
    assert e.value.status == 413 and "WORKBENCH_LIMITS__MAX_DECOMPRESSED_BYTES" in e.value.message
    assert inf.size <= (1 << 20) + 1  # it stopped one byte past the limit


@pytest.mark.parametrize("packed", [b"not gzip at all", gzip.compress(b"x" * 1000)[:20]])
def test_inflater_refuses_bad_or_truncated_data(packed: bytes) -> None:
    inf = Inflater("gzip", 1 << 20, "S")
    with pytest.raises(BodyError) as e:
        inf.feed(packed)
        inf.finish()
    assert e.value.status == 400


@pytest.mark.parametrize("name", ["family", "demo_intents", "a", "A-1_b", "x" * 64])
def test_names_that_follow_the_rule(name: str) -> None:
    assert check_name(name) == name


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("", "empty"),
        ("x" * 65, "65 characters"),
        ("x.clp", "use 'x'"),
        ("p.yaml", "use 'p'"),
        ("a/b", "path separators"),
        ("a\\..\\b", "path separators"),
        ("..", "must start with"),
        ("-x", "must start with"),
        ("a b", "' '"),
        ("a.b", "'.'"),
        ("café", "'é'"),
        ("a\udc00", "'\\udc00'"),
    ],
)
def test_names_that_break_the_rule_say_why_and_state_the_rule(name: str, reason: str) -> None:
    with pytest.raises(InvalidNameError) as e:
        check_name(name, "pipeline")
    msg = str(e.value)
    assert reason in msg and "1 to 64 characters" in msg and msg.startswith("pipeline name")
    msg.encode("utf-8")  # the message is always encodable, whatever the name


def test_store_refuses_bad_names(tmp_path) -> None:
    from workbench.store import Store

    store = Store.open(f"sqlite:///{tmp_path / 's.sqlite3'}")
    with pytest.raises(InvalidNameError):
        store.save_pipeline("x.yaml", "v1", "name: x.yaml")
    with pytest.raises(InvalidNameError):
        store.save_knowledge_base("a" * 300, "v1", [])


def test_name_cursor_pages_without_gaps_or_repeats() -> None:
    items = [{"name": f"kb{i:03d}"} for i in range(25)]
    seen, cursor = [], None
    while True:
        page, cursor = paging.after_name(items, cursor, 10)
        seen += [i["name"] for i in page]
        if cursor is None:
            break
    assert seen == sorted(i["name"] for i in items)


@pytest.mark.parametrize("cursor", ["%%%", "bm90IGpzb24", paging.encode({"a": 1})])
def test_foreign_cursors_are_422(cursor: str) -> None:
    with pytest.raises(ApiError) as e:
        paging.run_position(cursor)
    assert e.value.status == 422 and e.value.param == "query.cursor"


def test_limits_settings_per_endpoint(monkeypatch) -> None:
    monkeypatch.setenv("WORKBENCH_LIMITS__MAX_BODY_BYTES", "1000")
    monkeypatch.setenv("WORKBENCH_LIMITS__ENDPOINTS", '{"predict": {"max_json_depth": 8}}')
    limits = load_settings(database_url="sqlite:///x").limits
    assert limits.for_endpoint("predict").max_json_depth == 8
    assert limits.for_endpoint("predict").max_body_bytes == 1000
    assert limits.for_endpoint("v2_model_infer").max_body_bytes == 64 << 20  # built-in override kept
    assert limits.for_endpoint(None).max_json_depth == 64


def test_bodies_held_at_once_are_bounded_and_released() -> None:
    """Driven at the ASGI level: while one request holds its body (its route has not answered),
    the next that would pass the budget gets 503 with Retry-After; once the first answers, it fits."""
    import asyncio

    from starlette.applications import Starlette

    from api.limits import RequestLimitsMiddleware
    from workbench.config import LimitsSettings

    gate = asyncio.Event()

    async def app(scope, receive, send) -> None:
        await receive()
        if scope["path"] == "/hold":
            await gate.wait()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    mw = RequestLimitsMiddleware(app, LimitsSettings(max_inflight_body_bytes=150_000), routers=[])

    async def call(path: str, size: int) -> tuple[int, dict[bytes, bytes]]:
        chunks = [{"type": "http.request", "body": b"x" * size, "more_body": False}]
        out: dict[str, object] = {}

        async def receive():
            return chunks.pop(0) if chunks else {"type": "http.disconnect"}

        async def send(message):
            if message["type"] == "http.response.start":
                out["status"], out["headers"] = message["status"], dict(message["headers"])

        scope = {"type": "http", "method": "POST", "path": path, "headers": [(b"content-type", b"text/plain")]}
        scope["app"] = Starlette()
        await mw(scope, receive, send)
        return out["status"], out["headers"]  # type: ignore[return-value]

    async def scenario() -> None:
        holder = asyncio.create_task(call("/hold", 100_000))
        await asyncio.sleep(0.05)
        status, headers = await call("/other", 100_000)
        assert status == 503 and headers.get(b"retry-after") == b"1"
        assert (await call("/other", 10_000))[0] == 200  # what fits beside the holder still goes through
        gate.set()
        assert (await holder)[0] == 200
        assert (await call("/other", 100_000))[0] == 200  # released
        assert mw.budget.used == 0

    asyncio.run(scenario())


def test_the_route_of_a_request_is_remembered_within_bounds() -> None:
    """The middleware finds a request's route as the route table scan does, remembers it per method
    and path (so a predict does not try every route's regex again), and keeps that memory bounded:
    at most `ROUTE_CACHE_SIZE` pairs, none for paths longer than `ROUTE_CACHE_PATH`."""
    from api import limits as L
    from api.routes import ROUTERS

    mw = L.RequestLimitsMiddleware(None, load_settings().limits, ROUTERS)
    cases = [
        ("POST", "/v1/pipelines/demo_digits/predict"),
        ("GET", "/v1/pipelines/demo_digits"),
        ("POST", "/v2/models/m/infer"),
        ("GET", "/nowhere"),
        ("DELETE", "/v1/pipelines/demo_digits/predict"),
    ]
    for method, path in cases * 2:
        scope = {"method": method, "path": path}
        assert mw._route(scope) is L._route(scope, mw.endpoints)
    assert mw._route({"method": "POST", "path": "/v1/pipelines/x/predict"}).operation_id == "predict"
    assert mw._route({"method": "GET", "path": "/nowhere"}) is None
    assert len(mw._routes) == len(cases) + 1
    long_path = "/v1/pipelines/" + "x" * L.ROUTE_CACHE_PATH + "/predict"
    assert mw._route({"method": "POST", "path": long_path}).operation_id == "predict"
    assert ("POST", long_path) not in mw._routes
    for i in range(2 * L.ROUTE_CACHE_SIZE):
        mw._route({"method": "GET", "path": f"/v1/runs/{i}"})
    assert len(mw._routes) <= L.ROUTE_CACHE_SIZE
