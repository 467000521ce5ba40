"""`?f <- (not (a))` was reported as "unknown template 'not'"; CLIPS refuses it as a syntax error (a fact
address binds a fact pattern, not a conditional element). The message now says that; clipspy confirms
each case is refused."""

from __future__ import annotations

import clips
import pytest

from rules import check_sources


@pytest.mark.parametrize("ce", ["not (a)", "exists (a)", "test (> 1 0)", "or (a) (a)"])
def test_a_fact_address_on_a_conditional_element(ce: str, tmp_path) -> None:
    text = f"(deftemplate a (slot x)) (defrule r ?f <- ({ce}) => )"
    (d,) = check_sources([("m.clp", text)])
    head = ce.split()[0]
    assert d.message == f"a fact address (?f <-) binds a fact pattern, not a ({head} ...)"
    (tmp_path / "m.clp").write_text(text)
    with pytest.raises(clips.CLIPSError):
        clips.Environment().load(str(tmp_path / "m.clp"))
