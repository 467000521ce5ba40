"""Cursors of the list endpoints: opaque to clients, a position in a stable order to the server.

A cursor is base64url JSON of the last item of the page just sent (a name for name-ordered lists,
`[started_at, id]` for runs); the next page starts after it, so pages neither skip nor repeat
items when new ones arrive (keyset paging, not offsets).
"""

from __future__ import annotations

import base64
import binascii
import json
from datetime import datetime
from typing import Any

from .errors import ApiError

MAX_PAGE = 1000


def encode(value: Any) -> str:
    """The cursor naming `value` (JSON-able; datetimes as ISO 8601)."""
    text = json.dumps(value, default=lambda v: v.isoformat() if isinstance(v, datetime) else str(v))
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def decode(cursor: str) -> Any:
    """The value inside a cursor. Raises ApiError 422 (`query.cursor`) for one this API did not make."""
    try:
        return json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except (binascii.Error, ValueError, UnicodeDecodeError):
        raise ApiError(
            422,
            "query.cursor: not a cursor from this API (pass next_cursor of the previous page)",
            code="validation_failed",
            param="query.cursor",
        ) from None


def run_position(cursor: str | None) -> tuple[datetime, str] | None:
    """`(started_at, run id)` from a runs cursor."""
    if cursor is None:
        return None
    value = decode(cursor)
    try:
        at, rid = value
        return datetime.fromisoformat(at), str(rid)
    except (TypeError, ValueError):
        raise ApiError(422, "query.cursor: not a runs cursor", code="validation_failed", param="query.cursor") from None


def after_name(items: list[dict[str, Any]], cursor: str | None, limit: int) -> tuple[list[dict[str, Any]], str | None]:
    """One page of name-ordered `items` after the name in `cursor`, and the next cursor (None at the end)."""
    start = decode(cursor) if cursor is not None else None
    if start is not None and not isinstance(start, str):
        raise ApiError(422, "query.cursor: not a name cursor", code="validation_failed", param="query.cursor")
    ordered = sorted(items, key=lambda i: str(i.get("name", "")))
    if start is not None:
        ordered = [i for i in ordered if str(i.get("name", "")) > start]
    page = ordered[:limit]
    more = len(ordered) > limit
    return page, (encode(str(page[-1].get("name", ""))) if more and page else None)
