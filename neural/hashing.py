"""Model versions: SHA-256 content hashes of weight files or of a module's parameters and buffers."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterable
from pathlib import Path

import torch

_CHUNK = 1 << 20
_cache: dict[tuple[str, int, int], str] = {}
_lock = threading.Lock()


def _file_digest(path: Path) -> str:
    st = path.stat()
    key = (str(path.resolve()), st.st_size, st.st_mtime_ns)
    with _lock:
        if key in _cache:
            return _cache[key]
    h = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(_CHUNK):
            h.update(chunk)
    digest = h.hexdigest()
    with _lock:
        _cache[key] = digest
    return digest


def hash_files(paths: Iterable[str | Path], root: str | Path | None = None) -> str:
    """SHA-256 hex over the files in name order: each file's name (relative to `root`) and its content digest.

    Renaming or changing any file changes the version; the order the paths are given in does not.
    Raises FileNotFoundError for a missing file.
    """
    files = sorted(Path(p) for p in paths)
    h = hashlib.sha256()
    for p in files:
        name = str(p.relative_to(root)) if root is not None else p.name
        h.update(name.encode() + b"\0" + _file_digest(p).encode() + b"\n")
    return h.hexdigest()


def hash_module(module: torch.nn.Module) -> str:
    """SHA-256 hex over a module's state dict: each entry's name, dtype, shape and bytes, in name order."""
    h = hashlib.sha256()
    state = module.state_dict()
    for name in sorted(state):
        t = state[name]
        if not isinstance(t, torch.Tensor):
            continue
        t = t.detach().cpu().contiguous()
        h.update(f"{name}|{t.dtype}|{list(t.shape)}\n".encode())
        h.update(t.view(torch.uint8).numpy().tobytes() if t.numel() else b"")
    return h.hexdigest()
