"""A forward engine's CLIPS environment dropped without `close()` (an engine never closed, or a
runner whose build failed) printed `[ENVRNMNT8] Environment data not fully deallocated` to the
process's stdout: the firing trace's string builder was still allocated when clipspy destroyed
the environment."""

from __future__ import annotations

import gc

import pytest

from chaining.forward import ForwardEngine, KnowledgeBaseLoadError
from chaining.forward.clips_runner import ClipsRunner


def test_engine_dropped_without_close_prints_nothing(capfd):
    engine = ForwardEngine.from_sources([("k.clp", "(defrule r => (printout t hi crlf))")])
    assert engine.evaluate([]).output == "hi\n"
    del engine
    gc.collect()
    out, err = capfd.readouterr()
    assert "ENVRNMNT8" not in out + err


def test_failed_build_prints_nothing(capfd):
    with pytest.raises(KnowledgeBaseLoadError, match="undefined-fn"):
        ClipsRunner([("k.clp", "(defrule r (x) => (undefined-fn))")])
    gc.collect()
    out, err = capfd.readouterr()
    assert "ENVRNMNT8" not in out + err
