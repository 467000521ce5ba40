"""Checks of a request body that run before any parser sees it: UTF-8, JSON nesting depth, lone
surrogate escapes. None of them recurses, so no input can exhaust the Python or the C stack.

Each raises `BodyError(status, message, param)`; `api/limits.py` answers it in the API's error shape.
"""

from __future__ import annotations

import codecs
import json
import re
import sys
import zlib
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

# A JSON string token (RFC 8259 section 7), unrolled so that the regex engine does not backtrack.
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
# `\uD800`-`\uDFFF` escapes: the only way a JSON text can carry a surrogate code point.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
# `\u0000` in a JSON string: CLIPS strings are C strings (a fact's text would end at the NUL while the
# model sees the whole text) and PostgreSQL's text and JSONB cannot store it, so it is refused at the door.
_NUL_ESCAPE = re.compile(rb"\\u0000")
# Python refuses to convert integers longer than this many digits (CVE-2020-10735); a body with one
# would otherwise fail in the route's parser with no field named.
MAX_INT_DIGITS = sys.get_int_max_str_digits() or 4300
# A run of more than MAX_INT_DIGITS digits, found as a run of b"0" once every digit reads b"0" and every
# other byte b" " (`bytes.translate` then a substring search: ~2 ms per MiB, where the regex
# `[0-9]{4301,}` took ~25 ms per MiB holding the GIL, 190-250 ms for an 8 MiB text).
_DIGITS_AS_ZERO = bytes(0x30 if 0x30 <= b <= 0x39 else 0x20 for b in range(256))
_DIGIT_RUN = b"0" * (MAX_INT_DIGITS + 1)
# The scans below go through a large body window by window: none of their C calls (decoding,
# counting, regex searches, translate) holds the GIL for more than one window's work (~1-3 ms per MiB
# on this machine), so the event loop keeps answering while a worker thread checks an 8 MiB body.
SCAN_BYTES = 1 << 20


class BodyError(Exception):
    """The body is refused: `status` (400, 413, 415, 422), a message naming the limit or the field."""

    def __init__(self, status: int, message: str, param: str = "body") -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.param = param
        self.pending = False  # set by the reader: the client may still be sending the body
        self.retry_after_s: float | None = None


def check_utf8(body: bytes, what: str = "body") -> None:
    """Check that `body` is UTF-8, `SCAN_BYTES` at a time (a sequence cut by a window's end is
    decoded with the next window, so the first bad byte is the one a whole decode reports).
    Raises BodyError 400 naming the byte offset of the first bad byte."""
    view = memoryview(body)
    pos = 0
    while pos < len(body):
        end = min(len(body), pos + max(SCAN_BYTES, 4))  # a window holds any whole UTF-8 sequence
        try:
            _, used = codecs.utf_8_decode(view[pos:end], "strict", end == len(body))
        except UnicodeDecodeError as exc:
            at = pos + exc.start
            raise BodyError(
                400, f"{what}: not UTF-8 (byte 0x{body[at]:02x} at offset {at}); JSON and text must be UTF-8"
            ) from None
        pos += used


def _windows(size: int, overlap: int) -> Iterator[tuple[int, int]]:
    """(start, end) byte windows of `SCAN_BYTES` that cover `size` bytes, each reaching `overlap`
    bytes into the next, so a match of at most `overlap + 1` bytes lies whole in some window."""
    for start in range(0, size, SCAN_BYTES):
        yield start, min(size, start + SCAN_BYTES + overlap)


def _has_long_digits(body: bytes) -> bool:
    """Whether `body` holds a run of more than `MAX_INT_DIGITS` ASCII digits."""
    return any(_DIGIT_RUN in body[s:e].translate(_DIGITS_AS_ZERO) for s, e in _windows(len(body), MAX_INT_DIGITS))


def _search(pattern: re.Pattern[bytes], length: int, body: bytes) -> bool:
    """Whether `pattern` (whose matches are `length` bytes long) occurs in `body`."""
    return any(pattern.search(body, s, e) for s, e in _windows(len(body), length - 1))


def json_depth(body: bytes) -> int:
    """Deepest nesting of arrays and objects in a JSON text, counted without parsing or recursion.

    Brackets inside string tokens are ignored; an unterminated string counts its brackets, which can
    only over-estimate the depth of a text that does not parse anyway. Cost: one regex pass and one
    vectorised prefix sum over the brackets (numpy), O(len(body)).
    """
    skeleton = _STRING.sub(b"", body).translate(None, _NOT_BRACKETS)
    if not skeleton:
        return 0
    codes = np.frombuffer(skeleton, dtype=np.uint8)
    steps = np.where((codes == ord("[")) | (codes == ord("{")), 1, -1).astype(np.int32)
    return int(np.cumsum(steps).max())


def check_json(body: bytes, max_depth: int, setting: str) -> None:
    """Refuse a JSON body that is not UTF-8 (400), nested deeper than `max_depth` (400, naming
    `setting`), or that carries a lone surrogate escape such as `"\\ud800"` (422 naming the field).

    Syntax errors are left to the parser of the route (its 422 gives line and column).
    """
    check_utf8(body)
    # The depth cannot pass the number of opening brackets: most bodies are settled by two counts
    # (C loops) without the regex and numpy pass of `json_depth`.
    openers = sum(body.count(b"[", s, e) + body.count(b"{", s, e) for s, e in _windows(len(body), 0))
    depth = json_depth(body) if openers > max_depth else 0
    if depth > max_depth:
        raise BodyError(
            400, f"body: JSON nested {depth} levels deep; the limit is {max_depth} ({setting})", param="body"
        )
    if _has_long_digits(body):
        _check_long_integers(body)
    surrogate, nul = _search(_SURROGATE_ESCAPE, 6, body), _search(_NUL_ESCAPE, 6, body)
    if not (surrogate or nul):
        return
    try:
        doc = json.loads(body)  # safe: the depth is bounded above
    except ValueError:
        return  # the route's parser reports the syntax error with its position
    path = lone_surrogate_path(doc) if surrogate else None
    if path is not None:
        raise BodyError(
            422,
            f"{path}: a lone surrogate escape (\\ud800-\\udfff) is not a character; send UTF-8 text",
            param=path,
        )
    path = nul_path(doc) if nul else None
    if path is not None:
        raise BodyError(
            422,
            f"{path}: a NUL character (\\u0000) cannot be held by rule facts or the store; remove it",
            param=path,
        )


class _LongInt:
    """Stands for an integer literal too long to convert (its digit count) while the body is walked."""

    def __init__(self, digits: int) -> None:
        self.digits = digits


def _check_long_integers(body: bytes) -> None:
    """422 naming the field of the first integer literal over `MAX_INT_DIGITS` digits."""

    def parse_int(text: str) -> Any:
        digits = len(text.lstrip("-"))
        return _LongInt(digits) if digits > MAX_INT_DIGITS else int(text)

    try:
        doc = json.loads(body, parse_int=parse_int)  # safe: the depth is bounded by the caller
    except ValueError:
        return  # a syntax error: the route's parser reports it with its position
    stack: list[tuple[str, Any]] = [("body", doc)]
    while stack:
        path, v = stack.pop()
        if isinstance(v, _LongInt):
            raise BodyError(
                422,
                f"{path}: an integer of {v.digits} digits; the limit is {MAX_INT_DIGITS} digits "
                "(send large numbers as strings)",
                param=path,
            )
        if isinstance(v, dict):
            stack.extend((f"{path}.{k}", x) for k, x in reversed(list(v.items())))
        elif isinstance(v, list):
            stack.extend((f"{path}[{i}]", x) for i, x in reversed(list(enumerate(v))))


def lone_surrogate_path(doc: Any, root: str = "body") -> str | None:
    """The path (`body.input.text`, `body.items[2]`) of the first key or string holding a lone
    surrogate, or None. Walks with an explicit stack, so deep documents cannot overflow it."""
    return _first_bad_path(doc, root, lambda text: not _encodable(text))


def nul_path(doc: Any, root: str = "body") -> str | None:
    """The path of the first key or string holding a NUL character (U+0000), or None."""
    return _first_bad_path(doc, root, lambda text: "\x00" in text)


def _first_bad_path(doc: Any, root: str, bad: Callable[[str], bool]) -> str | None:
    """Depth-first, in document order: the path of the first key or string for which `bad` is true."""
    stack: list[tuple[str, Any]] = [(root, doc)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, str):
            if bad(value):
                return path
        elif isinstance(value, dict):
            for key, item in reversed(list(value.items())):
                key_text = str(key)
                if bad(key_text):
                    shown = key_text.encode("utf-8", "backslashreplace").decode().replace("\x00", "\\u0000")
                    return f"{path}.{shown}"
                stack.append((f"{path}.{key_text}", item))
        elif isinstance(value, (list, tuple)):
            stack.extend((f"{path}[{i}]", item) for i, item in reversed(list(enumerate(value))))
    return None


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


STEP_BYTES = 1 << 20  # inflate at most this much per call, so memory is accounted as it grows


class Inflater:
    """Streaming gzip / deflate decoding that stops as soon as the output passes `limit` bytes.

    Feed chunks as they arrive; output is produced in steps of at most STEP_BYTES and counted (and
    offered to `take`) step by step, so a small compressed body (a "zip bomb") never gets to allocate
    more than the limit plus one step. Raises BodyError 413
    when the limit is crossed, 400 when the data is not valid gzip / deflate.
    """

    def __init__(self, encoding: str, limit: int, setting: str, take: Callable[[int], None] | None = None) -> None:
        self.encoding = encoding
        self.limit = limit
        self.setting = setting
        self.take = take  # called with each piece's size before it is kept (a shared memory budget)
        self.size = 0
        self._parts: list[bytes] = []
        self._obj: Any = None
        self._head = b""

    def feed(self, chunk: bytes) -> None:
        if self._obj is None:
            self._head += chunk
            if len(self._head) < 2 and self.encoding != "gzip":
                return
            chunk, self._head = self._head, b""
            self._obj = zlib.decompressobj(self._wbits(chunk))
        data = chunk
        try:
            while data:
                out = self._obj.decompress(data, min(STEP_BYTES, self.limit + 1 - self.size))
                self._take(out)
                data = self._obj.unconsumed_tail
                if self._obj.eof and self._obj.unused_data.strip(b"\0"):
                    raise BodyError(400, f"body: data after the end of the {self.encoding} stream")
        except zlib.error as exc:
            raise BodyError(400, f"body: not valid {self.encoding} data ({exc})") from None

    def finish(self) -> bytes:
        if self._obj is None:
            if not self._head:
                return b""
            self.feed(b"")
            if self._obj is None:
                raise BodyError(400, f"body: not valid {self.encoding} data (too short)")
        try:
            self._take(self._obj.flush())
        except zlib.error as exc:
            raise BodyError(400, f"body: not valid {self.encoding} data ({exc})") from None
        if not self._obj.eof:
            raise BodyError(400, f"body: the {self.encoding} stream is truncated")
        return b"".join(self._parts)

    def _take(self, out: bytes) -> None:
        self.size += len(out)
        if self.size > self.limit:
            raise BodyError(
                413, f"body: inflates to more than {self.limit} bytes, the limit ({self.setting})", param="body"
            )
        if self.take is not None:
            self.take(len(out))
        self._parts.append(out)

    def _wbits(self, first: bytes) -> int:
        if self.encoding == "gzip":
            return 16 + zlib.MAX_WBITS
        # HTTP `deflate` is the zlib format (RFC 9110 8.4.1.2); some clients send raw deflate instead
        is_zlib = len(first) >= 2 and first[0] & 0x0F == 8 and (first[0] << 8 | first[1]) % 31 == 0
        return zlib.MAX_WBITS if is_zlib else -zlib.MAX_WBITS
