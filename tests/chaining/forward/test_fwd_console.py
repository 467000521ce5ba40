"""Console input (`stdin`: read, readline, read-number, get-char) in `workbench kb run`.

The oracle is real CLIPS through clipspy with CLIPS's own terminal router: a child Python process
that loads the file with `clips.Environment().load`, resets and runs, with the same bytes on its
standard input; its standard output is what the `clips` executable prints for piped input.
"""

from __future__ import annotations

import io
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from chaining.forward import Console, EngineConfig, ForwardEngine, RuleExecutionError
from cli import app

ROOT = Path(__file__).resolve().parents[3]
INTERACTIVE = ROOT / "tests" / "chaining" / "programs" / "interactive"
CASES = ROOT / "tests" / "regressions" / "cases" / "clips"

ORACLE = """
import sys, clips
env = clips.Environment()
for f in sys.argv[1:]:
    env.load(f)
env.reset()
env.run()
"""


def clips_prints(path: Path, answers: bytes) -> bytes:
    """What real CLIPS (its own terminal router, clipspy) prints for `answers` on stdin."""
    done = subprocess.run(
        [sys.executable, "-c", ORACLE, str(path)], input=answers, capture_output=True, timeout=60, check=True
    )
    return done.stdout


CASES_IO = [
    ("animal", b"yes\nyes\nyes\n"),
    ("animal", b"yes\nno\nno\nhamster\nIs it small?\n"),
    ("animal", b"maybe\nNO\nyes\n"),
    ("animal", b""),
    ("animal", b"yes\n"),  # the input ends mid-dialogue: EOF as CLIPS's EOF
    ("wine", b"meat\nyes\n25\n"),
    ("wine", b"pizza\nFish\nno\n19.5\n"),
    ("wine", b"poultry\n"),
    ("keys", b"ab12 c3\nhello world\n 42.5\n"),
    ("keys", b"x"),
]


@pytest.mark.parametrize(("name", "answers"), CASES_IO, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES_IO)])
def test_kb_run_prints_what_clips_prints_for_piped_answers(name, answers):
    path = INTERACTIVE / f"{name}.clp"
    result = CliRunner().invoke(app, ["kb", "run", str(path)], input=answers)
    assert result.exit_code == 0, result.output
    assert result.stdout_bytes == clips_prints(path, answers)


def test_reads_stdin_case_through_a_real_pipe():
    """The case of the issue: `echo ann | workbench kb run reads_stdin.clp` (a real pipe on fd 0)."""
    path = CASES / "reads_stdin.clp"
    for answers in (b"ann\n", b""):
        done = subprocess.run(
            [sys.executable, "-m", "cli", "kb", "run", str(path)],
            input=answers,
            capture_output=True,
            timeout=120,
            cwd=ROOT,
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout == clips_prints(path, answers)
    assert clips_prints(path, b"ann\n") == b"Name? Hello ann\n"


class _Recorder(io.TextIOBase):
    """An output stream that logs what was written before each read of the input."""

    def __init__(self, log):
        self.log = log

    def write(self, text):
        self.log.append(("out", text))
        return len(text)


class _Input(io.RawIOBase):
    def __init__(self, lines, log, delay=0.0):
        self.lines, self.log, self.delay = list(lines), log, delay

    def read(self, n=-1):
        self.log.append(("read", None))
        time.sleep(self.delay)
        return self.lines.pop(0) if self.lines else b""


def test_prompts_are_flushed_before_the_program_waits_for_input():
    log: list = []
    console = Console(_Input([b"ann\n"], log), _Recorder(log))
    src = [("ask.clp", (CASES / "reads_stdin.clp").read_text())]
    with ForwardEngine.from_sources(src, config=EngineConfig(workers=1, console=console)) as engine:
        result = engine.evaluate()
    assert log[0] == ("out", "Name? ")
    assert log[1] == ("read", None)
    assert "".join(t for k, t in log if k == "out") == "Name? Hello ann\n"
    assert result.output == "Name? Hello ann\n"


@pytest.mark.parametrize(("name", "answers"), [("animal", b"yes\nno\nno\nhamster\nIs it small?\n"), ("wine", b"")])
def test_a_queue_fed_console_as_a_front_end_drives_it(name, answers):
    """The TUI's way: the program runs on a worker thread; its output arrives through a callable,
    and each answer is put on a queue when the program waits (the input callable is called)."""
    import queue
    import threading

    path = INTERACTIVE / f"{name}.clp"
    lines = answers.decode().splitlines(keepends=True)
    answers_q: queue.Queue[str | None] = queue.Queue()
    shown: list[str] = []
    asked = threading.Semaphore(0)

    def ask() -> str | None:  # the program waits for input: the "UI" is told, then blocks on the queue
        asked.release()
        return answers_q.get(timeout=60)

    console = Console(input=ask, output=shown.append)
    results: list = []
    with ForwardEngine.from_sources(
        [(str(path), path.read_text())], config=EngineConfig(workers=1, console=console)
    ) as engine:
        worker = threading.Thread(target=lambda: results.append(engine.evaluate()))
        worker.start()
        pending = lines + [None]  # one answer each time the program asks, then the end of input
        deadline = time.monotonic() + 60
        while worker.is_alive() and time.monotonic() < deadline:
            if asked.acquire(timeout=0.05):
                answers_q.put(pending.pop(0) if pending else None)
        worker.join(60)
    assert not worker.is_alive()
    expected = clips_prints(path, answers).decode()
    assert "".join(shown) == results[0].output == expected


def test_console_input_callable_must_give_text():
    console = Console(input=lambda: 42)
    with pytest.raises(TypeError, match="expected str or bytes"):
        console.read_byte()


def test_waiting_for_input_does_not_count_against_the_time_limit():
    log: list = []
    console = Console(_Input([b"ann\n"], log, delay=0.6), None)
    src = [("ask.clp", (CASES / "reads_stdin.clp").read_text())]
    with ForwardEngine.from_sources(src, config=EngineConfig(workers=1, console=console, timeout=0.3)) as engine:
        result = engine.evaluate()
    assert result.output == "Name? Hello ann\n"
    assert console.waited >= 0.5


def test_engines_without_a_console_refuse_console_input_with_a_clear_error():
    src = [("ask.clp", (CASES / "reads_stdin.clp").read_text())]
    with ForwardEngine.from_sources(src, config=EngineConfig(workers=1)) as engine:
        for _ in range(2):  # and the environment stays usable
            with pytest.raises(RuleExecutionError) as info:
                engine.evaluate()
            assert "[WORKBENCH1]" in str(info.value) and "stdin" in str(info.value)
            assert info.value.partial.output == "Name? "


def test_json_mode_reads_the_console_and_records_the_dialogue():
    result = CliRunner().invoke(app, ["kb", "run", str(CASES / "reads_stdin.clp"), "--json"], input=b"bob\n")
    assert result.exit_code == 0
    import json

    assert json.loads(result.stdout)["output"] == "Name? Hello bob\n"
