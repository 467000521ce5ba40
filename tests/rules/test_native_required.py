"""CI builds the rule language's C readers: with `WORKBENCH_REQUIRE_NATIVE` set (`.ci/run` sets it),
a reader that did not build fails the suite here instead of the suite passing on the pure-Python
path (the tests of the readers themselves skip when a reader is missing)."""

from __future__ import annotations

import os

import pytest

from rules import native_read, native_scan


@pytest.mark.skipif(not os.environ.get("WORKBENCH_REQUIRE_NATIVE"), reason="WORKBENCH_REQUIRE_NATIVE not set")
def test_the_c_readers_are_built_where_required():
    assert native_read.AVAILABLE, native_read.UNAVAILABLE
    assert native_scan.AVAILABLE, native_scan.UNAVAILABLE
