"""Building the project's optional C extension modules (the rule language's data reader here, the
forward engine's fact I/O and trace recorder in `chaining.forward`): one place for the source
digest each built module carries and for the atomic install next to its source.

Run through `python -m chaining.forward.native_build` (what `scripts/bootstrap.sh` does).
"""

from __future__ import annotations

import hashlib
import importlib
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any


def source_digest(source: Path, *more: Path) -> str:
    """Digest of a C source (and of the other files it is built from, headers included, in the
    order given): each compiled module carries the one it was built from, and is not used when
    one of its sources has changed since."""
    h = hashlib.sha256(source.read_bytes())
    for path in more:
        h.update(b"\0" + path.name.encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:16]


def load_built(package: str, name: str, digest: Callable[[], str], sources: str) -> tuple[Any, str | None]:
    """(module, None) for the compiled extension `package.name` (built by `build_extension`) when
    it carries `digest()`, the digest of its current sources; else (None, why it is not used),
    naming `sources` in the message. Never raises for a missing or stale build."""
    try:
        module = importlib.import_module(f".{name}", package)
    except ImportError as exc:
        return None, f"not built ({exc}); run `bash scripts/bootstrap.sh` with a C compiler"
    try:
        current = digest()
    except OSError as exc:  # pragma: no cover - the sources removed from an installed copy
        return None, f"its source is missing ({exc})"
    if module.source_digest() != current:
        return None, f"built from another version of {sources}; run `bash scripts/bootstrap.sh` again"
    return module, None


def install(built: Path, directory: Path) -> Path:
    """Copy a freshly built module into `directory`; returns its path. Staged under a unique
    name (two builds may run at once) and moved into place atomically (a running process keeps
    its mapping of the old one)."""
    target = directory / built.name
    fd, staged_name = tempfile.mkstemp(prefix=target.name + ".", dir=target.parent)
    os.close(fd)
    staged = Path(staged_name)
    shutil.copyfile(built, staged)
    staged.chmod(0o755)
    staged.replace(target)
    return target


def build_extension(name: str, source: Path, verbose: bool = False, more: tuple[Path, ...] = ()) -> Path:
    """Compile the CPython extension `name` from `source` and the other C files or headers of
    `more` (setuptools, `-O2`, `source_digest(source, *more)` as `WB_SOURCE_DIGEST`) and install
    it next to `source`; returns its path.

    Raises:
        Exception (setuptools/compiler errors): no working C compiler or Python headers.
    """
    from setuptools import Distribution, Extension

    extension = Extension(
        name,
        [str(source)] + [str(p) for p in more if p.suffix == ".c"],
        include_dirs=[str(source.parent)],
        define_macros=[("WB_SOURCE_DIGEST", f'"{source_digest(source, *more)}"')],
        extra_compile_args=["-O2"],
    )
    with tempfile.TemporaryDirectory() as tmp:
        dist = Distribution({"ext_modules": [extension], "script_args": [] if verbose else ["--quiet"]})
        cmd = dist.get_command_obj("build_ext")
        cmd.build_lib = str(Path(tmp) / "lib")
        cmd.build_temp = str(Path(tmp) / "temp")
        cmd.ensure_finalized()
        cmd.run()
        return install(Path(cmd.get_ext_fullpath(name)), source.parent)
