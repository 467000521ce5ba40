"""Names of knowledge bases and pipelines: one rule, checked by the API, the CLI and the store.

A name becomes a file name (`knowledge_bases/NAME.clp`, `pipelines/NAME.yaml`), a URL path
segment and a database key, so it is kept to what is safe in all three: 1 to 64 characters,
ASCII letters, digits, `_` and `-`, starting with a letter or a digit. No dots (so no extension
doubling such as `x.clp` stored as `x.clp.clp`, no `..`), no `/` or `\\`, no spaces.
"""

from __future__ import annotations

import re

MAX_NAME_LENGTH = 64
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$"
NAME_RULE = (
    f"1 to {MAX_NAME_LENGTH} characters: ASCII letters, digits, '_' and '-', starting with a letter or a digit "
    "(no dots, slashes, backslashes or spaces)"
)
_NAME = re.compile(NAME_PATTERN)
_SUFFIXES = (".clp", ".yaml", ".yml", ".json")


class InvalidNameError(ValueError):
    """A knowledge-base or pipeline name breaks the rule; the message states the rule."""

    def __init__(self, kind: str, name: str, reason: str) -> None:
        super().__init__(f"{kind} name {_shown(name)}: {reason}; a name is {NAME_RULE}")
        self.kind = kind
        self.name = name
        self.reason = reason


def check_name(name: str, kind: str = "knowledge base") -> str:
    """Return `name` if it follows the rule (module docstring), else raise InvalidNameError.

    Args:
        name: the name to check.
        kind: what it names, for the message (`knowledge base`, `pipeline`).
    """
    if not isinstance(name, str) or not name:
        raise InvalidNameError(kind, str(name), "empty")
    if _NAME.fullmatch(name):  # not `match`: its `$` also matches before a trailing "\n"
        return name
    if len(name) > MAX_NAME_LENGTH:
        reason = f"{len(name)} characters, more than {MAX_NAME_LENGTH}"
    elif name.lower().endswith(_SUFFIXES):
        stem = name.rsplit(".", 1)[0]
        reason = f"names carry no file extension (it is added when stored); use {_shown(stem)}"
    elif "/" in name or "\\" in name:
        reason = "path separators are not allowed"
    elif not (name[0].isascii() and name[0].isalnum()):
        reason = f"must start with a letter or a digit, not {name[0]!r}"
    else:
        bad = next(c for c in name if not (c.isascii() and (c.isalnum() or c in "_-")))
        reason = f"character {bad!r} is not allowed"
    raise InvalidNameError(kind, name, reason)


def _shown(name: str) -> str:
    text = name if len(name) <= 40 else name[:40] + "..."
    return repr(text.encode("ascii", "backslashreplace").decode("ascii"))
