"""Where the CLI writes what it is told to write: one rule for every output option.

The folder an output goes into must exist; the CLI never creates missing parent folders (as `cp`
and `tar -f` do not), so a mistyped path fails at once rather than leaving a new folder tree
somewhere unexpected:

- a file option (`bench ... --out FILE`, `bench api_compare --out FILE`, `model export --onnx FILE`,
  `demo --json FILE`) needs FILE's folder to exist and be writable, and FILE not to be a folder;
- a folder option (`demo --write-inputs DIR`, `model add --repository DIR`) creates DIR itself when
  it is missing, but not DIR's parent.

Every one is checked before any work (a benchmark runs for minutes): refused with exit status 2 and
one line `error: --OPTION PATH: REASON`.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import typer

#: The sentence each output option's help ends with.
FILE_HELP = "Its folder must exist (missing folders are not created)."
FOLDER_HELP = "Created if missing; its parent folder must exist."


def file_problem(path: Path, kind: str = "file") -> str | None:
    """Why the output file `path` cannot be written (a folder, a missing or read-only folder), or None.
    `kind` names the file in the message (`JSON file`, `ONNX file`)."""
    if path.is_dir():
        return f"is a folder; give the path of the {kind} to write"
    folder = path.parent
    if not folder.is_dir():
        if folder.exists():
            return f"{folder} is not a folder"
        return f"the folder {folder} does not exist (missing folders are not created)"
    if not os.access(folder, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        return "not writable"
    return None


def folder_problem(path: Path) -> str | None:
    """Why the output folder `path` cannot be written into or made (its parent missing, a file), or None."""
    if path.exists():
        if not path.is_dir():
            return "is a file; give a folder"
        return None if os.access(path, os.W_OK) else "not writable"
    parent = path.parent
    if parent.exists() and not parent.is_dir():
        return f"{parent} is not a folder"
    if not parent.is_dir():
        return f"the folder {parent} does not exist (missing parent folders are not created)"
    return None if os.access(parent, os.W_OK) else f"cannot create it: {parent} is not writable"


def check_output_file(option: str, path: Path | None, kind: str = "file") -> None:
    """Exit 2 with `error: OPTION PATH: REASON` when `path` (None: the option is not given) cannot be written."""
    if path is not None and (problem := file_problem(path, kind)):
        typer.echo(f"error: {option} {path}: {problem}", err=True)
        raise typer.Exit(2)


def check_output_folder(option: str, path: Path | None) -> None:
    """Exit 2 with `error: OPTION PATH: REASON` when the output folder `path` cannot be used or made."""
    if path is not None and (problem := folder_problem(path)):
        typer.echo(f"error: {option} {path}: {problem}", err=True)
        raise typer.Exit(2)


@contextlib.contextmanager
def c_stdout_to_stderr() -> Iterator[None]:
    """Send what C code writes to the process's standard output (file descriptor 1) to standard error while
    the block runs: CLIPS prints `[ENVRNMNT8] Environment data not fully deallocated` with C's `printf` when an
    environment is destroyed with memory it lost (e.g. after a `read-number` that read no number), and `kb run`'s
    standard output is the program's text or one JSON object. Python's own `sys.stdout` is flushed first; C's
    buffered output is flushed before the descriptor is put back. Not for servers: another thread's output in
    that window would go to standard error too. Where descriptor 1 cannot be redirected, the block just runs."""
    try:
        sys.stdout.flush()
        libc = ctypes.CDLL(None)
        libc.fflush(None)
        saved = os.dup(1)
    except (OSError, AttributeError, ValueError):
        yield
        return
    try:
        os.dup2(2, 1)
        yield
    finally:
        libc.fflush(None)
        os.dup2(saved, 1)
        os.close(saved)
