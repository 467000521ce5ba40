"""The raw-CLIPS side of `workbench bench rules`: clipspy's fastest way to run a program.

A user after speed with clipspy loads the file, resets, asserts through CLIPS's fact builder
(`FBSetDeftemplate` / `FBPutSlot` / `FBAssert`, clipspy's `FactBuilder` without its Python
objects: nothing is retained, no `Fact` object is made per fact) and runs. No trace, no
read-back, output discarded: the floor our engine (which also records the trace and returns
working memory) is compared with. Slot values are prepared before the clock starts, as a
program that asserts the same data again and again would keep them.
"""

from __future__ import annotations

import time
from pathlib import Path


def raw_clips_run(path: Path, facts: list[dict]) -> tuple[float, int, float, float]:
    """Load `path`, then twice (warm-up, timed): reset, assert `facts` (JSON fact dicts of
    template facts: symbols as str, numbers, lists as multifields), run.

    Returns:
        (seconds of reset + asserts + run, rules fired, CPU seconds of the same, seconds of the run alone)
    """
    import clips
    from clips._clips import ffi, lib
    from clips.common import environment_builder

    class Discard(clips.Router):
        def query(self, name):
            return name == "stdout"

        def write(self, name, message):
            pass

    env = clips.Environment()
    env.add_router(Discard("bench-discard", 45))
    env.load(str(path))
    e = env._env
    fb = environment_builder(e, "fact")
    mb = environment_builder(e, "multifield")
    cv, item = ffi.new("CLIPSValue *"), ffi.new("CLIPSValue *")
    prepared = [(f["template"].encode(), [(k.encode(), v) for k, v in f["slots"].items()]) for f in facts]
    create_int, create_float, create_symbol = lib.CreateInteger, lib.CreateFloat, lib.CreateSymbol

    def scalar(v):
        t = type(v)
        if t is int:
            return create_int(e, v)
        if t is float:
            return create_float(e, v)
        return create_symbol(e, v.encode())

    def assert_all() -> None:
        for template, slots in prepared:
            lib.FBSetDeftemplate(fb, template)
            for key, v in slots:
                if type(v) is list:
                    lib.MBReset(mb)
                    for x in v:
                        item.value = scalar(x)
                        lib.MBAppend(mb, item)
                    cv.value = lib.MBCreate(mb)
                else:
                    cv.value = scalar(v)
                lib.FBPutSlot(fb, key, cv)
            lib.FBAssert(fb)

    lib.Reset(e)  # warm-up run; the timed run is the second, as for our engine
    assert_all()
    lib.Run(e, -1)
    t, c = time.perf_counter(), time.process_time()
    lib.Reset(e)
    assert_all()
    r = time.perf_counter()
    fired = lib.Run(e, -1)
    end = time.perf_counter()
    return end - t, fired, time.process_time() - c, end - r
