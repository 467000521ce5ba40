"""`KnowledgeBaseLibrary` keeps a bounded least-recently-used cache of compiled forward engines and
closes what it evicts (a long-running server sees a new knowledge-base version at every rules edit)."""

from __future__ import annotations

import pytest

from workbench import Workbench
from workbench.config import load_settings
from workbench.pipeline.knowledge import KnowledgeBaseLibrary

RULES = "(defrule r{n} (go) => (assert (done {n})))\n"
GO = {"template": "go", "values": []}


def _versions(lib: KnowledgeBaseLibrary, n: int):
    return [lib.from_text("edited", RULES.format(n=i)) for i in range(n)]


def _closed(engine) -> bool:
    with pytest.raises(RuntimeError, match="closed"):
        engine.evaluate([])
    return True


def test_engines_are_evicted_least_recently_used_and_closed(tmp_path):
    lib = KnowledgeBaseLibrary(tmp_path, max_engines=2)
    v0, v1, v2 = _versions(lib, 3)
    engines = {}
    for kb in (v0, v1):
        with lib.lease(kb) as eng:
            engines[kb.version] = eng
            assert eng.evaluate([GO]).facts_of("done")
    with lib.lease(v0) as eng:  # v0 becomes the most recently used
        assert eng is engines[v0.version]
    with lib.lease(v2) as eng:
        engines[v2.version] = eng
    assert lib.cached_engines == [f"edited@{v0.version}", f"edited@{v2.version}"]
    assert _closed(engines[v1.version])
    assert engines[v0.version].evaluate([]).facts == []  # still open
    lib.close()
    assert _closed(engines[v0.version]) and _closed(engines[v2.version])


def test_an_engine_evicted_while_leased_closes_after_the_last_lease(tmp_path):
    lib = KnowledgeBaseLibrary(tmp_path, max_engines=1)
    v0, v1 = _versions(lib, 2)
    with lib.lease(v0) as held:
        with lib.lease(v1):
            pass  # evicts v0 from the cache, but v0 is in use
        assert lib.cached_engines == [f"edited@{v1.version}"]
        assert held.evaluate([GO]).facts_of("done")
    assert _closed(held)
    lib.close()


def test_cache_size_is_a_setting(tmp_path, monkeypatch):
    monkeypatch.setenv("WORKBENCH_MAX_FORWARD_ENGINES", "3")
    settings = load_settings(database_url=f"sqlite:///{tmp_path / 'db.sqlite3'}")
    with Workbench(settings=settings, knowledge_base_dir=tmp_path, pipeline_dir=tmp_path) as wb:
        assert wb.library.max_engines == 3
    with pytest.raises(Exception, match="(?i)max_forward_engines"):
        load_settings(max_forward_engines=0)
    with pytest.raises(ValueError, match="max_engines"):
        KnowledgeBaseLibrary(tmp_path, max_engines=0)
