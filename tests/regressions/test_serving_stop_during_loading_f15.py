"""f15: a server stopped while its start-up loading ran (a TestClient closed at once, a server
stopped during start-up) left what the loading thread made after the stop running: `Serving.stop`
cancelled the task that awaited the thread, not the thread, so the workbench it built (and its
recorder thread and store), or a generation engine it started, was never closed. In the tests two
generation engines and two recorders of tests/regressions/test_api_bad_json_and_seed.py outlived
their module (tests/thread_watch.py's report). Now the loading thread starts no further step once
stop() began, and stop() waits for it and closes what it made."""

from __future__ import annotations

import asyncio
import threading

from workbench.config import load_settings
from workbench.serving import Serving, service


def test_a_workbench_built_after_stop_began_is_closed(tmp_path, monkeypatch):
    entered, release, built = threading.Event(), threading.Event(), []
    real_build = service._build_workbench

    def slow_build(settings):
        entered.set()
        release.wait(30)
        built.append(real_build(settings))
        return built[-1]

    monkeypatch.setattr(service, "_build_workbench", slow_build)
    later: list[str] = []
    serving = Serving(
        settings=load_settings(database_url=f"sqlite:///{tmp_path / 'db.sqlite3'}"),
        load_models=False,
        serve_demo_lm=False,
        load=lambda s: later.append("load step ran"),
    )

    async def main() -> None:
        await serving.start()
        assert await asyncio.to_thread(entered.wait, 30)
        stopping = asyncio.ensure_future(serving.stop())
        await asyncio.sleep(0.05)  # stop() has begun while the workbench is being built
        release.set()
        await stopping

    asyncio.run(main())
    assert len(built) == 1 and serving.workbench is built[0]
    assert built[0]._closed, "the workbench built during the stop was left open"
    assert later == []  # no step started after stop() began
    assert not built[0].recorder._thread.is_alive()
