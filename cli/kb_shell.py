"""`workbench kb shell [FILE...] [--allow-unsafe] [--time-limit S]`: CLIPS's command loop (the `CLIPS>` prompt).

Every CLIPS command and function (facts, agenda, rules, watch, run, reset, clear, assert,
retract, modify, ppdefrule, matches, load, batch, exit...) runs in real CLIPS (clipspy) and
prints what the `clips` executable prints (`chaining.forward.clips_shell`). FILEs are loaded
first, as `(load FILE)` does. On a terminal: the `CLIPS> ` prompt, multi-line input until the
command is complete, line editing and history (GNU readline, kept in
`$XDG_STATE_HOME/workbench/kb_shell_history`); Ctrl-C halts a running command or drops a partly
typed one, Ctrl-D or `(exit)` leaves. With commands piped on stdin: no prompt and no echo, only
what CLIPS prints (programs that `(read)` take their answers from the following lines, as in
CLIPS). Functions that reach the operating system (`system`, `open`, `save`...) are refused
unless `--allow-unsafe` (or the setting `allow_unsafe_rules`); `load` and `batch` check the
file (a file that cannot be read gets CLIPS's own `[ARGACCES3]` answer and FALSE). A command
running past `--time-limit` seconds (or the setting `kb_shell_time_limit_s`) is halted as Ctrl-C
halts it, `[WORKBENCH4]` says so, and the shell goes on. Exit status: N of `(exit N)`, else 0.
"""

from __future__ import annotations

import ctypes
import os
import sys
from pathlib import Path
from typing import Annotated

import typer

_libc = ctypes.CDLL(None)


def _flush_c_stdio() -> None:
    """CLIPS writes through C's stdio: flush it before Python prints (the prompt)."""
    _libc.fflush(None)


def shell(
    files: Annotated[list[Path] | None, typer.Argument(help="Rule files to load first, in order.")] = None,
    allow_unsafe: Annotated[bool, typer.Option("--allow-unsafe", help="Permit functions that reach the OS.")] = False,
    time_limit: Annotated[
        float | None,
        typer.Option(
            "--time-limit",
            min=0.001,
            help="Seconds one command may run before CLIPS is halted (default: setting kb_shell_time_limit_s, "
            "else none).",
        ),
    ] = None,
) -> None:
    """CLIPS's command loop: type CLIPS commands at the CLIPS> prompt, or pipe them on stdin."""
    from chaining.forward.clips_shell import ClipsShell

    from .kb_check import allow_unsafe_setting

    interactive = sys.stdin.isatty()
    engine = ClipsShell(
        allow_unsafe=allow_unsafe_setting(allow_unsafe),
        prompt=interactive,
        time_limit=time_limit if time_limit is not None else _time_limit_setting(),
    )
    try:
        for f in files or []:
            engine.load(f)
        if interactive:
            _terminal_loop(engine)
        else:
            _piped_loop(engine)
    finally:
        _flush_c_stdio()
        sys.stdout.flush()
    raise typer.Exit(engine.exit_code or 0)


def _time_limit_setting() -> float | None:
    """The setting `kb_shell_time_limit_s` (WORKBENCH_KB_SHELL_TIME_LIMIT_S); exit 2 on bad settings."""
    if "WORKBENCH_KB_SHELL_TIME_LIMIT_S" not in os.environ and "WORKBENCH_SETTINGS_FILE" not in os.environ:
        return None  # the default: no source could change it, so skip loading the settings
    from workbench.config import ConfigError, get_settings

    try:
        return get_settings().kb_shell_time_limit_s
    except ConfigError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None


def _piped_loop(engine) -> None:
    """Read stdin through CLIPS's own terminal router, byte by byte, as CLIPS's command loop
    does: a `(read)` in a command then reads the very next characters."""
    from chaining.forward import clips_native as native

    read, ep = native.lib.ReadRouter, engine._ep
    while engine.exit_code is None:
        b = read(ep, b"stdin")
        if b < 0:
            break
        engine.feed(bytes((b,)))
    engine.finish()


def _terminal_loop(engine) -> None:
    history = _setup_readline()
    sys.stderr.write("workbench kb shell: CLIPS 6.4 (clipspy); (exit) or Ctrl-D to leave\n")
    try:
        while engine.exit_code is None:
            _flush_c_stdio()
            try:
                line = input("" if engine.pending() else "CLIPS> ")
            except EOFError:
                sys.stdout.write("\n")
                break
            except KeyboardInterrupt:
                sys.stdout.write("\n")
                engine.discard()
                continue
            engine.feed(line.encode() + b"\n")
        engine.finish()
    finally:
        if history is not None:
            _save_history(history)


def _setup_readline() -> Path | None:
    try:
        import readline
    except ImportError:  # pragma: no cover - no GNU readline on this platform
        return None
    state = Path(os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state") / "workbench"
    path = state / "kb_shell_history"
    try:
        readline.read_history_file(path)
    except OSError:
        pass
    readline.set_history_length(1000)
    return path


def _save_history(path: Path) -> None:
    import readline

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        readline.write_history_file(path)
    except OSError:
        pass


def register(app: typer.Typer) -> None:
    app.command("shell")(shell)
