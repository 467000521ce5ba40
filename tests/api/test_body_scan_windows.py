"""`check_json` scans a large body window by window (`SCAN_BYTES`): the same answers as scanning
it whole, and no single C call holds the GIL for most of the check (the event loop keeps answering
`/healthz` while a worker thread checks an 8 MiB `/v2` text)."""

from __future__ import annotations

import json
import random
import re
import threading
import time

import pytest

from api import body_checks
from api.body_checks import MAX_INT_DIGITS, BodyError, check_json, check_utf8

_WHOLE_LONG_DIGITS = re.compile(rb"[0-9]{%d,}" % (MAX_INT_DIGITS + 1))  # the one-call scan it replaced


def _whole_utf8_error(body: bytes) -> int | None:
    try:
        body.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.start
    return None


def _window_utf8_error(body: bytes) -> int | None:
    try:
        check_utf8(body)
    except BodyError as exc:
        return int(re.search(r"at offset (\d+)", exc.message).group(1))
    return None


@pytest.mark.parametrize("window", [4, 5, 7, 64])
def test_utf8_windows_report_the_first_bad_byte_of_a_whole_decode(monkeypatch, window: int) -> None:
    monkeypatch.setattr(body_checks, "SCAN_BYTES", window)
    rng = random.Random(window)
    pieces = ["a", "é", "€", "😀", "\u07ff", "\U0010ffff"]
    junk = [b"\x80", b"\xc3", b"\xe2\x82", b"\xf0\x9f\x98", b"\xed\xa0\x80", b"\xff", b"\xc0\xaf"]
    for _ in range(400):
        body = bytearray("".join(rng.choices(pieces, k=rng.randrange(0, 40))).encode())
        if rng.random() < 0.7:
            at = rng.randrange(0, len(body) + 1)
            body[at:at] = rng.choice(junk)
        body = bytes(body)
        assert _window_utf8_error(body) == _whole_utf8_error(body), body


def test_utf8_character_cut_by_a_window_end_is_accepted(monkeypatch) -> None:
    monkeypatch.setattr(body_checks, "SCAN_BYTES", 8)
    for lead in range(10):
        check_utf8(b"x" * lead + "😀€é".encode() * 3)


@pytest.mark.parametrize("run", [MAX_INT_DIGITS, MAX_INT_DIGITS + 1, 3 * MAX_INT_DIGITS])
def test_long_digit_runs_across_window_ends(monkeypatch, run: int) -> None:
    monkeypatch.setattr(body_checks, "SCAN_BYTES", 1000)
    for start in (0, 1, 999, 1000, 1001, 2500, 4999):
        body = b"[" + b" " * start + b"7" * run + b"]"
        assert body_checks._has_long_digits(body) == bool(_WHOLE_LONG_DIGITS.search(body)) == (run > MAX_INT_DIGITS)


@pytest.mark.parametrize("escape", [b"\\ud800", b"\\u0000"])
def test_escapes_across_window_ends_are_refused(monkeypatch, escape: bytes) -> None:
    monkeypatch.setattr(body_checks, "SCAN_BYTES", 16)
    for pad in range(40):
        body = b'{"a": "' + b"x" * pad + escape + b'"}'
        with pytest.raises(BodyError) as e:
            check_json(body, 64, "x")
        assert e.value.status == 422 and e.value.param == "body.a"


def test_brackets_counted_across_windows_still_trigger_the_depth_check(monkeypatch) -> None:
    monkeypatch.setattr(body_checks, "SCAN_BYTES", 3)
    with pytest.raises(BodyError) as e:
        check_json(b"[" * 65 + b"]" * 65, 64, "x")
    assert e.value.status == 400 and "65 levels" in e.value.message


def _longest_gap_share(check) -> float:
    """Run `check()`; the longest time a thread waking every millisecond was held off, over the check's time."""
    gaps: list[float] = []
    stop, ready = threading.Event(), threading.Event()

    def tick() -> None:
        last = time.perf_counter()
        ready.set()
        while not stop.is_set():
            time.sleep(0.001)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now

    ticker = threading.Thread(target=tick)
    ticker.start()
    ready.wait()
    t0 = time.perf_counter()
    check()
    wall = time.perf_counter() - t0
    stop.set()
    ticker.join()
    return max(gaps) / wall


def test_checking_a_large_text_body_lets_other_threads_run() -> None:
    """A thread waking every millisecond is held off for a small part of a 32 MiB text body's check.
    Before, one regex search (`[0-9]{4301,}` over the whole body) held the GIL for 76-86% of the check
    (0.8-1 s of 0.9-1.3 s); windowed, the longest gap is 5-7% of it. The best of three tries is
    compared, with a wide margin, so that the machine's noise cannot fail it."""
    text = "word " * (32 * 1024 * 1024 // 5)
    body = json.dumps({"inputs": [{"name": "text", "shape": [1], "datatype": "BYTES", "data": [text]}]}).encode()
    shares = [_longest_gap_share(lambda: check_json(body, 64, "x")) for _ in range(3)]
    assert min(shares) < 0.5, shares
