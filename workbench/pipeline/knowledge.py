"""Knowledge bases for pipelines: resolve a reference to rule files, load and validate them, and keep
one compiled forward engine per knowledge-base version (reused across runs: reset, not reload).

A reference is a name (`knowledge_bases/NAME.clp`, or every `*.clp` of `knowledge_bases/NAME/`
sorted, then that folder's decision tables `*.csv`/`*.xlsx` sorted) or a path to a `.clp` file
(relative to the pipeline file, then the working directory).
`override(name, kb)` replaces a knowledge base for the runs that ask for it (replay with an
edited rule file uses a private library with the override).
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import rules
from chaining.forward import EngineConfig, ForwardEngine
from chaining.forward.load_check import clips_refusals
from rules.knowledge_base import folder_files
from workbench.names import check_name

from .errors import KnowledgeBaseConflictError, KnowledgeBaseError, KnowledgeBaseNotFoundError

KB_SUFFIX = ".clp"
RECHECK_S = 1.0  # how long the files a reference resolves to are reused before resolving it again
MAX_ENGINES = 32  # compiled engines kept (settings.max_forward_engines); each holds CLIPS environments


class KnowledgeBaseLibrary:
    """Loads knowledge bases by reference and caches them and their engines by content version.

    Thread-safe. `functions` are Python functions callable from rules (registered with every engine).
    Compiled engines are kept in a least-recently-used cache of `max_engines` (every edit of a rule
    file is a new version, so a long-running server would otherwise keep every version's CLIPS
    environments); an evicted engine is closed as soon as no `lease` holds it.
    """

    def __init__(
        self,
        directory: str | Path | None,
        *,
        allow_unsafe: bool = False,
        functions: Mapping[str, Callable] | None = None,
        engine_config: EngineConfig | None = None,
        max_engines: int = MAX_ENGINES,
    ):
        if max_engines < 1:
            raise ValueError(f"max_engines must be >= 1, got {max_engines}")
        self.directory = Path(directory) if directory else None
        self.allow_unsafe = allow_unsafe
        self.functions = dict(functions or {})
        self.engine_config = engine_config or EngineConfig(timeout=10.0, max_firings=100_000)
        self._lock = threading.RLock()
        self._kbs: dict[tuple, tuple[tuple, rules.KnowledgeBase]] = {}
        self.max_engines = max_engines
        self._engines: OrderedDict[str, ForwardEngine] = OrderedDict()  # least recently used first
        self._leases: dict[int, int] = {}  # id(engine) -> how many leases hold it
        self._retired: dict[int, ForwardEngine] = {}  # evicted while leased: closed at the last release
        self._overrides: dict[str, rules.KnowledgeBase] = {}
        self._recent: dict[tuple, tuple[float, list[Path]]] = {}

    # -- resolution -------------------------------------------------------------------------
    def names(self) -> list[str]:
        """Names of the knowledge bases in the directory (files `NAME.clp` and folders with .clp files)."""
        if self.directory is None or not self.directory.is_dir():
            return sorted(self._overrides)
        out = set(self._overrides)
        for p in self.directory.iterdir():
            if p.is_file() and p.suffix == KB_SUFFIX:
                out.add(p.stem)
            elif p.is_dir() and any(p.glob(f"*{KB_SUFFIX}")):
                out.add(p.name)
        return sorted(out)

    def paths(self, ref: str, base_dir: str | Path | None = None) -> list[Path]:
        """The rule files a reference names, in load order.

        Raises:
            KnowledgeBaseNotFoundError: nothing matches; the message lists where it looked.
        """
        tried: list[str] = []
        if self.directory is not None and "/" not in ref and not ref.endswith(KB_SUFFIX):
            f = self.directory / f"{ref}{KB_SUFFIX}"
            d = self.directory / ref
            if f.is_file():
                return [f]
            if d.is_dir():
                files = folder_files(d)
                if files:
                    return files
            tried += [str(f), f"{d}/*{KB_SUFFIX}"]
        for base in ([Path(base_dir)] if base_dir else []) + [Path.cwd()]:
            p = (base / ref) if not Path(ref).is_absolute() else Path(ref)
            if p.is_file():
                return [p]
            if p.is_dir() and any(p.glob(f"*{KB_SUFFIX}")):
                return folder_files(p)
            tried.append(str(p))
        raise KnowledgeBaseNotFoundError(ref, "looked for " + ", ".join(dict.fromkeys(tried)))

    @staticmethod
    def name_of(ref: str) -> str:
        """The knowledge base name a reference stands for (`a/b/gate.clp` -> `gate`)."""
        p = Path(ref)
        return p.stem if p.suffix == KB_SUFFIX else p.name

    # -- loading ----------------------------------------------------------------------------
    def load(self, refs: str | list[str], base_dir: str | Path | None = None) -> rules.KnowledgeBase:
        """The validated knowledge base for one reference or several (loaded together, in order).
        Cached until a file's modification time or size changes.

        Raises:
            KnowledgeBaseNotFoundError: a reference resolves to no file.
            KnowledgeBaseError: the files do not validate (`diagnostics` are file:line:col).
        """
        refs = [refs] if isinstance(refs, str) else list(refs)
        if len(refs) == 1 and self.name_of(refs[0]) in self._overrides:
            return self._overrides[self.name_of(refs[0])]
        key = (tuple(refs), str(base_dir or ""))
        now = time.monotonic()
        recent = self._recent.get(key)
        if recent is not None and now - recent[0] < RECHECK_S:  # which files a reference names: re-resolved each second
            files = recent[1]
        else:
            files = [p for r in refs for p in self.paths(r, base_dir)]
            self._recent[key] = (now, files)
        try:  # one stat per file per load: an edited file is picked up by the next run
            stamp = tuple((str(p), st.st_mtime_ns, st.st_size) for p in files for st in (p.stat(),))
        except FileNotFoundError:
            self._recent.pop(key, None)
            return self.load(refs, base_dir)
        with self._lock:
            hit = self._kbs.get(key)
            if hit is not None and hit[0] == stamp:
                return hit[1]
        name = "+".join(self.name_of(r) for r in refs)
        try:
            kb = rules.load_knowledge_base(files, name=name, allow_unsafe=self.allow_unsafe, functions=self.functions)
        except rules.RuleError as exc:
            raise KnowledgeBaseError(name, exc.diagnostics) from exc
        with self._lock:
            self._kbs[key] = (stamp, kb)
        return kb

    def from_text(self, name: str, text: str, filename: str | None = None) -> rules.KnowledgeBase:
        """Validate rule text as knowledge base `name`. Raises KnowledgeBaseError with located diagnostics."""
        try:
            return rules.knowledge_base_from_text(
                name, text, allow_unsafe=self.allow_unsafe, functions=self.functions, filename=filename
            )
        except rules.RuleError as exc:
            raise KnowledgeBaseError(name, exc.diagnostics) from exc

    def override(self, name: str, kb: rules.KnowledgeBase) -> None:
        """Use `kb` wherever knowledge base `name` is referenced (by name) through this library."""
        with self._lock:
            self._overrides[name] = kb

    def save(self, name: str, text: str) -> tuple[rules.KnowledgeBase, Path]:
        """Validate `text`, load it into a throw-away CLIPS environment (`chaining.forward.load_check`), and
        write it to `knowledge_bases/NAME.clp` (only after both pass).

        Raises:
            KnowledgeBaseError: invalid rules, or rules CLIPS refuses to load (nothing is written).
            ValueError: a bad name, or no knowledge-base directory configured.
            KnowledgeBaseConflictError: `NAME` is a folder knowledge base (`knowledge_bases/NAME/*.clp`):
                `NAME.clp` beside it would hide its files from then on (nothing is written).
        """
        check_name(name, "knowledge base")
        if self.directory is None:
            raise ValueError("no knowledge-base directory is configured (settings.knowledge_base_dir)")
        target = self.directory / f"{name}{KB_SUFFIX}"
        folder = self.directory / name
        files = [p.name for p in folder_files(folder) if p.suffix == KB_SUFFIX] if folder.is_dir() else []
        if files:
            raise KnowledgeBaseConflictError(
                name,
                f"knowledge base {name!r} is a folder of {len(files)} rule files ({', '.join(files)}); an upload "
                "is one text and cannot replace it: edit the folder's files, or upload under another name",
            )
        kb = self.from_text(name, text, filename=target.name)  # diagnostics name `NAME.clp`, never the server's path
        refused = clips_refusals(kb.sources, functions=self.functions, allow_unsafe=self.allow_unsafe)
        if refused:  # what CLIPS refuses and the validator missed: the first run would fail (`load_check`)
            raise KnowledgeBaseError(name, refused)
        self.directory.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.{uuid.uuid4().hex}.tmp")  # its own: another caller may be saving too
        try:
            tmp.write_text(text, encoding="utf-8")
            tmp.replace(target)
        finally:
            tmp.unlink(missing_ok=True)
        self._recent.clear()
        return kb, target

    # -- engines ----------------------------------------------------------------------------
    @contextmanager
    def lease(self, kb: rules.KnowledgeBase) -> Iterator[ForwardEngine]:
        """The compiled forward engine for this knowledge base version (built once, then reused),
        held open for the `with` block: eviction from the cache closes it only after the last lease.

        Raises:
            chaining.forward.KnowledgeBaseLoadError: CLIPS refuses the rules (building the engine).
        """
        key = f"{kb.name}@{kb.version}"
        with self._lock:
            eng = self._engines.get(key)
            if eng is None:
                eng = ForwardEngine.from_knowledge_base(kb, functions=self.functions, config=self.engine_config)
                self._engines[key] = eng
            else:
                self._engines.move_to_end(key)
            self._leases[id(eng)] = self._leases.get(id(eng), 0) + 1
            evicted = self._evict()
        for old in evicted:
            old.close()
        try:
            yield eng
        finally:
            with self._lock:
                n = self._leases[id(eng)] - 1
                if n:
                    self._leases[id(eng)] = n
                else:
                    del self._leases[id(eng)]
                retired = self._retired.pop(id(eng), None) if not n else None
            if retired is not None:
                retired.close()

    def _evict(self) -> list[ForwardEngine]:
        """Drop the least recently used engines beyond `max_engines` (under the lock); returns those
        no lease holds, to be closed; leased ones are closed by their last lease."""
        out = []
        while len(self._engines) > self.max_engines:
            _, old = self._engines.popitem(last=False)
            if id(old) in self._leases:
                self._retired[id(old)] = old
            else:
                out.append(old)
        return out

    @property
    def cached_engines(self) -> list[str]:
        """`name@version` of the engines in the cache, least recently used first."""
        with self._lock:
            return list(self._engines)

    def close(self) -> None:
        with self._lock:
            engines = list(self._engines.values()) + list(self._retired.values())
            self._engines.clear()
            self._retired.clear()
        for eng in engines:
            eng.close()

    def describe(self, kb: rules.KnowledgeBase) -> dict[str, Any]:
        """`kb.summary()` and `files`: the source files' names relative to the library's directory."""
        return kb.summary() | {"files": [self.relative(f) for f, _ in kb.sources]}

    def relative(self, file: str | Path) -> str:
        """`file` as a path relative to the library's directory (`animals.clp`, `sub/rules.clp`); a
        file outside it by its name alone: clients of a server never see its absolute paths."""
        path = Path(file)
        if self.directory is not None:
            try:
                return path.resolve().relative_to(self.directory.resolve()).as_posix()
            except (ValueError, OSError):
                pass
        return path.name if path.is_absolute() else path.as_posix()

    def relative_text(self, text: str) -> str:
        """`text` (an error message) with the library directory's prefix dropped from the paths it names."""
        if self.directory is None:
            return text
        for prefix in {str(self.directory.resolve()), str(self.directory)}:
            text = text.replace(prefix.rstrip("/") + "/", "")
        return text
