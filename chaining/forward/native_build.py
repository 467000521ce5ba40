"""`python -m chaining.forward.native_build [--quiet]`: build the optional C parts (the forward
engine's `native_trace`: the trace recorder; `native_facts`: the fact asserter; and the rule
language's `rules.native_scan`: the plain-data deffacts reader, and `rules.native_read`: the reader of
rule text), each unless the module present was
built from its current source. Run by `scripts/bootstrap.sh`.

Exit 0 when all are built or up to date, 1 when one could not be built (no C compiler or
Python headers): the engine then uses its Python code for that part, which is not an error.
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    quiet = "--quiet" in argv
    from rules import native_read, native_scan

    from . import native_facts, native_trace

    status = 0
    for part, what in (
        (native_trace, "rule traces use Python callbacks"),
        (native_facts, "facts are asserted by Python code"),
        (native_scan, "data deffacts are read by regular expressions"),
        (native_read, "rule text is read by the grammar (lark) alone"),
    ):
        name = part.__name__.rsplit(".", 1)[-1]
        if part.AVAILABLE:
            continue
        try:
            path = part.build(verbose=not quiet)
        except BaseException as exc:  # noqa: BLE001 - any build failure (setuptools raises SystemExit) means "use the fallback"
            if isinstance(exc, KeyboardInterrupt):
                raise
            first = (str(exc).strip().splitlines() or [""])[0][
                :160
            ]  # a compiler's error: its first line is enough here
            print(f"{name} not built ({type(exc).__name__}: {first}); {what} (slower)", file=sys.stderr)
            status = 1
            continue
        if not quiet:
            print(f"built {path}")
    return status


if __name__ == "__main__":
    raise SystemExit(main())
