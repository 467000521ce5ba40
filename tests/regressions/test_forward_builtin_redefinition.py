"""Regression (issue 17): a deffunction named like a CLIPS built-in (CLIPS's waltz.clp defines
`atan2`, which CLIPS 6.4 has built in). Real CLIPS 6.4 reports `[DFFNXPSR2] Deffunctions are not
allowed to replace external functions.`, skips that construct, loads the rest, and the rule
then prints 0.785398163397448 with the built-in atan2. The engine does the same at run time
(the check side, and `--strict`, are `rules`' and `kb check`'s)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import clips

from chaining.forward import EngineConfig, ForwardEngine

CASE = Path(__file__).parent / "cases" / "clips" / "atan2_redefine.clp"


def _clips_load_and_run(path: Path) -> str:
    env = clips.Environment()
    out: list[str] = []

    class Capture(clips.Router):
        def query(self, name):
            return name == "stdout"

        def write(self, name, message):
            out.append(message)

    env.add_router(Capture("capture", 50))
    try:
        env.load(str(path))
    except clips.CLIPSError:  # clipspy raises after CLIPS's load finished with an error
        pass
    env.reset()
    env.run()
    return "".join(out)


def test_the_construct_is_reported_skipped_and_the_rest_runs_as_in_clips():
    text = CASE.read_text()
    # The engine's own input is a validated knowledge base; this one carries the sources as they are.
    kb = SimpleNamespace(sources=[("atan2_redefine.clp", text)], name="atan2_redefine", version="test")
    with ForwardEngine(kb, config=EngineConfig(workers=1)) as engine:
        assert len(engine.load_messages) == 1
        message = engine.load_messages[0]
        assert message.startswith("atan2_redefine.clp:7:1: CLIPS skipped this deffunction: [DFFNXPSR2]")
        result = engine.evaluate()
    assert result.output == "0.785398163397448\n" == _clips_load_and_run(CASE)


def test_a_deffunction_with_its_own_name_still_loads():
    kb = SimpleNamespace(
        sources=[
            (
                "ok.clp",
                "(deffunction my-atan2 (?y ?x) (atan (/ ?y ?x)))\n(defrule r => (printout t (my-atan2 1 1) crlf))",
            )
        ],
        name="ok",
        version="test",
    )
    with ForwardEngine(kb, config=EngineConfig(workers=1)) as engine:
        assert engine.load_messages == []
        assert engine.evaluate().output == "0.785398163397448\n"
