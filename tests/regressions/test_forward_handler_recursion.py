"""A COOL message-handler that sends itself the same message forever crashed the process
(SIGSEGV: CLIPS has no recursion limit and overflows the C stack). Handlers on a cycle of the
call graph are now watched like recursive deffunctions and halted at the depth limit."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import clips

from chaining.forward import EngineConfig, ForwardEngine

ROOT = Path(__file__).resolve().parents[2]

ENDLESS = """
(defclass FOO (is-a USER))
(defmessage-handler FOO go () (send ?self go))
(defrule start => (make-instance f of FOO) (send [f] go))
"""

BOUNDED = """
(defclass COUNTER (is-a USER))
(defmessage-handler COUNTER down (?k)
  (printout t "at " ?k crlf)
  (if (> ?k 0) then (send ?self down (- ?k 1))))
(deffunction kick (?x ?k) (send ?x down ?k))
(defrule start => (make-instance c of COUNTER) (kick [c] 3) (printout t "done" crlf))
"""


def test_endless_handler_recursion_is_stopped_not_a_crash():
    # In a child process: if the guard ever fails again, the crash must not take pytest with it.
    code = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(ROOT)!r})
        from chaining.forward import EngineConfig, ForwardEngine, RuleExecutionError
        engine = ForwardEngine.from_sources([("cool.clp", {ENDLESS!r})], config=EngineConfig(workers=1, timeout=30))
        for _ in range(2):  # and the engine is still usable afterwards
            try:
                engine.evaluate([])
            except RuleExecutionError as exc:
                print("stopped:", exc)
        """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"child died with {proc.returncode}: {proc.stderr[-2000:]}"
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("stopped:")]
    assert len(lines) == 2
    assert "recursion too deep: go reached call depth 1001 (limit 1000)" in lines[0]


def test_bounded_handler_recursion_prints_what_clips_prints():
    env = clips.Environment()  # raw clipspy as the oracle
    printed: list[str] = []

    class Capture(clips.Router):
        def query(self, name):
            return name == "stdout"

        def write(self, name, message):
            printed.append(message)

    env.add_router(Capture("capture", 50))
    for construct in (
        "(defclass COUNTER (is-a USER))",
        '(defmessage-handler COUNTER down (?k) (printout t "at " ?k crlf)'
        " (if (> ?k 0) then (send ?self down (- ?k 1))))",
        "(deffunction kick (?x ?k) (send ?x down ?k))",
        '(defrule start => (make-instance c of COUNTER) (kick [c] 3) (printout t "done" crlf))',
    ):
        env.build(construct)
    env.reset()
    env.run()

    result = ForwardEngine.from_sources([("counter.clp", BOUNDED)], config=EngineConfig(workers=1)).evaluate([])
    assert result.output == "".join(printed) == "at 3\nat 2\nat 1\nat 0\ndone\n"
    assert [f.rule for f in result.firings] == ["start"]
