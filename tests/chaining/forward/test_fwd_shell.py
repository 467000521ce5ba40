"""`workbench kb shell`: CLIPS's command loop, compared with real CLIPS's own `CommandLoop`.

The oracle is CLIPS 6.4's `CommandLoop` (commline.c) on a clipspy environment in a child
process, fed the same session on stdin; it prints a banner and a `CLIPS> ` prompt before each
command, which piped `kb shell` does not (it prints CLIPS's output only), so the oracle's
prompts and banner are removed before comparing. Sessions end with `(exit)` (CLIPS's loop does
not end at end of input).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
SHELL = ROOT / "tests" / "chaining" / "programs" / "shell"

ORACLE = """
import clips
from cffi import FFI
from clips import _clips
from clips._clips import ffi
abi = FFI()
abi.cdef("void CommandLoop(void *env);")
lib = abi.dlopen(_clips.__file__)
env = clips.Environment()
lib.CommandLoop(abi.cast("void *", int(ffi.cast("uintptr_t", env._env))))
"""


def clips_command_loop(session: bytes, cwd: Path) -> tuple[bytes, bytes]:
    done = subprocess.run([sys.executable, "-c", ORACLE], input=session, capture_output=True, timeout=60, cwd=cwd)
    out = done.stdout.split(b"\n", 1)[1]  # the banner line
    return out.replace(b"CLIPS> ", b""), done.stderr


def kb_shell(
    session: bytes, *args: str, cwd: Path = SHELL, env_extra: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "cli", "kb", "shell", *args],
        input=session,
        capture_output=True,
        timeout=120,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env_extra or {})},
    )


@pytest.mark.parametrize("session", ["session1.txt", "session_read.txt"])
def test_piped_session_prints_what_clips_command_loop_prints(session):
    text = (SHELL / session).read_bytes()
    ours = kb_shell(text)
    out, err = clips_command_loop(text, SHELL)
    assert ours.stdout == out
    assert ours.stderr == err
    assert ours.returncode == (3 if session == "session_read.txt" else 0)


def test_multi_line_commands_and_files_given_on_the_command_line():
    session = b'(facts)\n(assert (person (name dee)\n   (age\n 50)))\n(run)\n"not\nclosed yet"\n(exit)\n'
    ours = kb_shell(session, "family.clp")
    out, _ = clips_command_loop(b'(load "family.clp")\n' + session, SHELL)
    assert ours.returncode == 0, ours.stderr
    # kb shell FILE loads (printing what load prints) but does not reset: the oracle's load and reset print
    # `kb shell FILE` loads as (load FILE) does without printing TRUE; the oracle also printed reset's nothing
    assert ours.stdout == out.replace(b"*\nTRUE\n", b"*\n", 1)
    assert b'"not\nclosed yet"\n' in ours.stdout


@pytest.mark.parametrize(
    ("session", "refused"),
    [
        (b'(system "echo leaked")\n', "system"),
        (b'(progn (bind ?x 1) (open "f.txt" out "w"))\n', "open"),
        (b'(defrule r => (system "echo leaked"))\n(run)\n', "system"),
        (b'(batch "unsafe.bat")\n', "system"),
        (b'(load "unsafe.clp")\n', "remove"),
    ],
)
def test_the_safety_gate_refuses_unsafe_functions(tmp_path, session, refused):
    (tmp_path / "unsafe.bat").write_text('(printout t "batch ran" crlf)\n(system "echo leaked")\n')
    (tmp_path / "unsafe.clp").write_text('(defrule r => (remove "x.txt"))\n')
    ours = kb_shell(session + b"(exit)\n", cwd=tmp_path)
    assert ours.returncode == 0
    assert b"leaked" not in ours.stdout and b"batch ran" not in ours.stdout
    assert b"[WORKBENCH2] Refused" in ours.stderr and refused.encode() in ours.stderr
    assert not (tmp_path / "f.txt").exists()


def test_allow_unsafe_permits_them(tmp_path):
    ours = kb_shell(b'(system "echo permitted")\n(exit)\n', "--allow-unsafe", cwd=tmp_path)
    assert b"permitted" in ours.stdout and ours.returncode == 0


def test_batch_commands_each_pass_the_gate_and_echo_as_clips():
    session = b'(batch "commands.bat")\n(batch* "commands.bat")\n(exit)\n'
    ours = kb_shell(session)
    out, _ = clips_command_loop(session, SHELL)
    assert ours.stdout == out


def test_load_or_batch_of_a_missing_file_answers_as_clips_not_as_the_gate(tmp_path):
    session = (
        b'(load "missing.clp")\n(load* missing.clp)\n(batch "/no/such/dir/x.bat")\n(batch* "nope.bat")\n'
        b'(printout t "still here" crlf)\n(exit)\n'
    )
    ours = kb_shell(session, cwd=tmp_path)
    out, err = clips_command_loop(session, tmp_path)
    assert b"WORKBENCH2" not in ours.stderr
    assert (ours.stdout, ours.stderr) == (out, err)
    assert err.count(b"[ARGACCES3]") == 4 and ours.returncode == 0


def test_load_of_a_file_named_by_an_expression_is_refused_naming_the_gate(tmp_path):
    (tmp_path / "f.clp").write_text("(defrule r => (printout t ran crlf))\n")
    session = b'(load (str-cat "f" ".clp"))\n(bind ?f "f.clp")\n(batch* ?f)\n(load "f.clp")\n(exit)\n'
    ours = kb_shell(session, cwd=tmp_path)
    assert ours.stderr.count(b"[WORKBENCH2] Refused: (load ...) here needs the file name written out") == 1
    assert ours.stderr.count(b"[WORKBENCH2] Refused: (batch* ...) here needs the file name written out") == 1
    assert b"--allow-unsafe" in ours.stderr
    assert ours.stdout.endswith(b"TRUE\n")  # the literal load still works
    allowed = kb_shell(session, "--allow-unsafe", cwd=tmp_path)
    assert b"WORKBENCH2" not in allowed.stderr


@pytest.mark.parametrize("how", ["option", "setting"])
def test_a_command_past_the_time_limit_is_halted_and_the_shell_goes_on(tmp_path, how):
    session = (
        b"(defrule spin => (while TRUE do (bind ?x 1)))\n(reset)\n(run)\n(+ 1 2)\n"
        b"(loop-for-count (?i 1 1000000000) (bind ?y ?i))\n(* 2 3)\n(exit)\n"
    )
    args = ("--time-limit", "0.3") if how == "option" else ()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    if how == "setting":
        env["WORKBENCH_KB_SHELL_TIME_LIMIT_S"] = "0.3"
    ours = subprocess.run(
        [sys.executable, "-m", "cli", "kb", "shell", *args],
        input=session,
        capture_output=True,
        timeout=120,
        cwd=tmp_path,
        env=env,
    )
    assert ours.returncode == 0, ours.stderr
    assert ours.stderr.count(b"[WORKBENCH4] Halted: the command ran past the shell's time limit of 0.3 s") == 2
    assert b"Execution halted during the actions of defrule 'spin'" in ours.stdout
    assert ours.stdout.endswith(b"3\nFALSE\n6\n")  # (+ 1 2), the halted loop's value, (* 2 3)


def test_time_limit_must_be_positive():
    from chaining.forward.clips_shell import ClipsShell

    with pytest.raises(ValueError, match="time_limit"):
        ClipsShell(time_limit=0)
    ours = kb_shell(b"(exit)\n", env_extra={"WORKBENCH_KB_SHELL_TIME_LIMIT_S": "-1"})
    assert ours.returncode == 2 and b"WORKBENCH_KB_SHELL_TIME_LIMIT_S" in ours.stderr


def test_ctrl_c_halts_a_running_command_and_the_shell_goes_on(tmp_path):
    proc = subprocess.Popen(
        [sys.executable, "-m", "cli", "kb", "shell", "--allow-unsafe"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    proc.stdin.write(b'(close (open "ready.txt" ready "w"))\n')  # the shell is up and reading commands
    proc.stdin.flush()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not (tmp_path / "ready.txt").exists():
        time.sleep(0.1)
    # the loop says it has started (a fixed sleep before Ctrl-C raced a slow start: a SIGINT that arrives
    # while the piped shell still reads the line is a KeyboardInterrupt outside any command)
    proc.stdin.write(b'(progn (close (open "spinning.txt" spin "w")) (while TRUE do (bind ?x 1)))\n')
    proc.stdin.flush()
    while time.monotonic() < deadline and not (tmp_path / "spinning.txt").exists():
        time.sleep(0.05)
    assert (tmp_path / "spinning.txt").exists(), "the loop did not start"
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(b'(printout t "after" crlf)\n(exit)\n', timeout=60)
    assert proc.returncode == 0, err
    assert out.endswith(b"after\n")


def test_terminal_session_has_prompt_and_continuation_lines():
    import pty

    pid, fd = pty.fork()
    if pid == 0:  # pragma: no cover - the child
        os.chdir(ROOT)
        os.environ["XDG_STATE_HOME"] = "/nonexistent-dir-for-history"
        os.execv(sys.executable, [sys.executable, "-m", "cli", "kb", "shell"])
    output = b""

    def read_until(token: bytes, timeout: float = 60.0) -> None:
        nonlocal output
        deadline = time.monotonic() + timeout
        while token not in output and time.monotonic() < deadline:
            try:
                output += os.read(fd, 4096)
            except OSError:
                break

    try:
        read_until(b"CLIPS> ")
        os.write(fd, b"(+ 1\n")
        os.write(fd, b"   41)\n")
        read_until(b"42")
        os.write(fd, b"(exit 4)\n")
        read_until(b"\x00", timeout=10)
    finally:
        _, status = os.waitpid(pid, 0)
        os.close(fd)
    assert b"CLIPS> " in output and b"42" in output
    assert os.waitstatus_to_exitcode(status) == 4
