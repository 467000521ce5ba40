"""Recorders of the forward engine's trace: the rules fired and the fact changes of one run.

Both take the trace from CLIPS's callbacks (never from `(watch ...)` output, see `clips_native`):
at each firing CLIPS writes the activation (`<salience> <rule>: f-1,*,f-3`, `ActivationPPForm`)
into a string builder; the assert and retract callbacks (a `modify` calls both) record
`(kind, fact id, firing index)`.

A firing names its rule as the knowledge base keys it (`rules.knowledge_base`): the bare name, or
`MODULE::name` when rules of several modules share the name (CLIPS's own `(watch rules)` prints the
bare name even then, so two rules would read as one). The module is the focus while the rule fires
(CLIPS fires the agenda of the focus module only).

    NativeRecorder   the callbacks are C functions (`native_trace.c`, built by the bootstrap
                     when a C compiler is present): no Python call during the run. The C
                     callback keeps the rule's name id (names are copied once per recorder) and
                     the fact ids as integers; Python turns them into `Firing`s after the run.
                     The ids come from CLIPS's Activation/PartialMatch structures once that
                     reading agreed with the activation text on the rule's first firing (on the
                     clipspy releases in `DIRECT_LAYOUT_CLIPSPY`), else from the text.
    PythonRecorder   the callbacks are Python functions (cffi): one Python call per firing and
                     per fact change; the activation lines are parsed after the run
                     (`parse_activations`). The fallback, and the reference the tests compare to.

Usage (`ClipsRunner`): construct (registers the callbacks); per evaluation `start()` just before `Run`, `stop()`
after it (in `finally`), then `take_firings()`, `take_events()`, `take_error()`; `close()`.
"""

from __future__ import annotations

import functools
import re
import weakref
from collections.abc import Callable
from typing import Any

from . import clips_native as native
from .result import FactEvent, Firing

# CLIPS grows a string builder by exactly what is appended (a copy of the whole text each time
# the buffer is full): the Python recorder moves the lines out before the buffer fills.
_FIRE_BUFFER = 1 << 16
_FIRE_DRAIN = _FIRE_BUFFER // 2
# One line of the Python recorder: the module, a space and `ActivationPPForm`'s "<salience> <rule>: <basis>",
# the basis e.g. "f-1,*,f-3".
_ACTIVATION_LINE = re.compile(r"^(\S+) \S+ +(\S+): ?(.*)$", re.M)
# The items of a basis, separated by commas: a fact "f-<id>" (the group), "*" (not/exists/test)
# or an instance "[name]", whose name may hold commas or "f-7" (it ends at "]," or "]" at the end).
_BASIS_ITEM = re.compile(r"\[.*?\](?=,|$)|f-(\d+)(?=,|$)|[^,]*")
_BASIS_CACHE_SIZE = 4096
_NATIVE_KEEP_BYTES = 1 << 20  # the C buffers keep at most this much between runs

_KINDS = ("assert", "retract")


def parse_activations(
    text: str, count: int, cache: dict[str, tuple[int, ...]], shown: Callable[[str], str] | None = None
) -> list[Firing]:
    """Parse `count` lines of "<module> " + `ActivationPPForm` text into `Firing`s, in order.

    `cache` maps a basis text ("f-1,*,f-3") to its fact ids and is reused across calls (a
    serving loop sees the same few bases again and again: fact ids restart at each reset); it is
    cleared when it grows past a bound. `shown` turns "MODULE::name" into the name a firing
    shows (`RuleNames`; default: "MODULE::name").

    Raises:
        RuntimeError: the text does not have `count` activation lines (a CLIPS format change).
    """
    found = _ACTIVATION_LINE.findall(text)
    if len(found) != count:
        raise RuntimeError(f"expected {count} activation lines from CLIPS, parsed {len(found)}: {text[:200]!r}")
    if len(cache) > _BASIS_CACHE_SIZE:
        cache.clear()
    new = tuple.__new__  # a named tuple without its Python-level __new__ (hot path)
    items = _BASIS_ITEM.findall
    out = []
    append = out.append
    get = cache.get
    for module, rule, basis in found:
        facts = get(basis)
        if facts is None:
            facts = cache[basis] = tuple([int(i) for i in items(basis) if i])
        rule = f"{module}::{rule}"
        append(new(Firing, (shown(rule) if shown is not None else rule, facts)))
    return out


class RuleNames:
    """ "MODULE::name" (a rule as the recorders see it fire) -> the name firings show: the bare name,
    or "MODULE::name" when rules of several modules share it, as `rules.knowledge_base` keys them.
    Read from the environment's rules (`get-defrule-list *`) when a rule not seen before fires
    (once per rule and recorder: the hot path is a dict lookup)."""

    __slots__ = ("_env", "_shown")

    def __init__(self, env: Any):
        self._env = env
        self._shown: dict[str, str] = {}

    def __call__(self, qualified: str) -> str:
        shown = self._shown.get(qualified)
        if shown is None:
            self._read()
            shown = self._shown.get(qualified)
            if shown is None:  # not a rule of the environment now (removed since it fired): as it fired
                shown = self._shown[qualified] = qualified.split("::", 1)[1] if "::" in qualified else qualified
        return shown

    def _read(self) -> None:
        names = [str(n) for n in self._env.eval("(get-defrule-list *)")]  # each "MODULE::name"
        modules_of: dict[str, int] = {}
        for q in names:
            bare = q.split("::", 1)[1]
            modules_of[bare] = modules_of.get(bare, 0) + 1
        self._shown = {q: (q if modules_of[q.split("::", 1)[1]] > 1 else q.split("::", 1)[1]) for q in names}


def _release(env_pointer: Any, env: Any, installed: list, keep: list, free_native: Any, sb: Any) -> None:
    """Undo a recorder, once (`close`, or the recorder's finalizer): remove its callbacks from the
    environment, then free what they wrote into and the string builder. `env` (clipspy's
    `Environment`) is passed to keep it alive until then; `keep` holds the callbacks and the C
    context, which CLIPS points to until the callbacks are removed."""
    for remove, name in installed:
        remove(env_pointer, name)
    installed.clear()
    if free_native is not None and keep:
        free_native(keep[0])
    keep.clear()
    native.lib.SBDispose(sb)


class _Recorder:
    """What both recorders share: the string builder, the registration, the parse cache."""

    def __init__(self, env: Any, env_pointer: Any, trace_firings: bool, trace_facts: bool):
        self.trace_firings = trace_firings
        self.trace_facts = trace_facts
        self._ep = env_pointer
        self._sb = native.lib.CreateStringBuilder(env_pointer, _FIRE_BUFFER)
        self._basis_cache: dict[str, tuple[int, ...]] = {}
        self._rule_names = RuleNames(env)
        self._installed: list[tuple[Any, bytes]] = []
        self._keep: list[Any] = []  # the C context (first, if any) and callbacks CLIPS points to
        # Undone even without `close` (a runner dropped by a failed build or an engine never
        # closed): the callbacks are removed before what they point to is freed, and the builder
        # is freed before the environment is destroyed (CLIPS otherwise prints `[ENVRNMNT8]
        # Environment data not fully deallocated` to the process's stdout). The finalizer holds
        # `env`, so the environment outlives all of it.
        self._finalizer = weakref.finalize(
            self, _release, env_pointer, env, self._installed, self._keep, self._free_native(), self._sb
        )

    def _free_native(self) -> Any:
        """What frees the C context (`self._keep[0]`), or None."""
        return None

    def _register(self, fire: Any, on_assert: Any, on_retract: Any, context: Any) -> None:
        nl = native.lib
        hooks = []
        if self.trace_firings or self.trace_facts:
            hooks.append((nl.AddBeforeRuleFiresFunction, nl.RemoveBeforeRuleFiresFunction, b"workbench-fire", fire))
        if self.trace_facts:
            hooks += [
                (nl.AddAssertFunction, nl.RemoveAssertFunction, b"workbench-assert", on_assert),
                (nl.AddRetractFunction, nl.RemoveRetractFunction, b"workbench-retract", on_retract),
            ]
        for add, remove, name, fn in hooks:
            if not add(self._ep, name, fn, native.CALLBACK_PRIORITY, context):
                raise RuntimeError(f"CLIPS refused the {name.decode()} callback")
            self._installed.append((remove, name))

    def close(self) -> None:
        """Remove the callbacks, free the buffers and the builder (idempotent)."""
        self._finalizer()  # runs `_release` once


class PythonRecorder(_Recorder):
    """Callbacks in Python (cffi): the fallback when the C recorder is not built."""

    kind = "python"

    def __init__(self, env: Any, env_pointer: Any, trace_firings: bool, trace_facts: bool):
        super().__init__(env, env_pointer, trace_firings, trace_facts)
        self._view = native.abi.cast("StringBuilderView *", self._sb)
        self._text: list[bytes] = []  # lines moved out of the builder before it outgrows its buffer
        self.fired = 0
        self._recording = False  # fact events are recorded during the run only, not the input asserts
        self._events: list[FactEvent] = []
        self._error: BaseException | None = None
        self._install()

    def _install(self) -> None:
        nl = native.lib
        sb, view, text = self._sb, self._view, self._text
        pp_form, sb_append, sb_reset, fact_index, string, focus, module_name = (
            nl.ActivationPPForm,
            nl.SBAppend,
            nl.SBReset,
            nl.FactIndex,
            native.abi.string,
            nl.GetFocus,
            nl.DefmoduleName,
        )
        events = self._events
        newline, space = b"\n", b" "
        new = tuple.__new__

        def count_firing(env, activation, context):
            self.fired += 1

        def on_fire(env, activation, context):
            m = focus(env)  # the rule's module: the focus, whose agenda fires
            sb_append(sb, module_name(m) if m else b"?")
            sb_append(sb, space)
            pp_form(activation, sb)
            sb_append(sb, newline)
            self.fired += 1
            if view.length > _FIRE_DRAIN:
                text.append(string(view.contents, view.length))
                sb_reset(sb)

        def on_assert(env, fact, context):
            if self._recording:
                events.append(new(FactEvent, ("assert", fact_index(fact), self.fired - 1 if self.fired else None)))

        def on_retract(env, fact, context):
            if self._recording:
                events.append(new(FactEvent, ("retract", fact_index(fact), self.fired - 1 if self.fired else None)))

        def onerror(exc_type, exc, tb):  # an exception cannot cross CLIPS: kept, raised after the run
            if self._error is None:
                self._error = exc

        fire = native.callback("RuleFiredFunction", on_fire if self.trace_firings else count_firing, onerror)
        asserted = native.callback("FactFunction", on_assert, onerror)
        retracted = native.callback("FactFunction", on_retract, onerror)
        self._keep += [fire, asserted, retracted]
        self._register(fire, asserted, retracted, native.abi.NULL)

    def start(self) -> None:
        self._take_text()  # an interrupted earlier evaluation left some: drop them
        self._events.clear()
        self.fired = 0
        self._recording = self.trace_facts

    def stop(self) -> None:
        self._recording = False

    def _take_text(self) -> str:
        view = self._view
        if view.length:
            self._text.append(native.abi.string(view.contents, view.length))
            native.lib.SBReset(self._sb)
        elif not self._text:
            return ""
        text = b"".join(self._text).decode("utf-8", "replace")
        self._text.clear()
        return text

    def take_firings(self, skip: int = 0) -> list[Firing]:
        """The run's firings, but the first `skip` (a runaway's trace is cut to its end)."""
        text = self._take_text()
        if not text:
            return []
        if skip > 0:
            text = "\n".join(text.split("\n")[skip:])
        return parse_activations(text, self.fired - skip, self._basis_cache, self._rule_names)

    def take_events(self, skip: int = 0) -> list[FactEvent]:
        """The run's fact events; with `skip`, those of the firings after the first `skip`,
        their firing index less `skip` (matching `take_firings(skip)`)."""
        if not self._events:
            return []
        out = self._events[:]
        self._events.clear()
        if skip > 0:
            new = tuple.__new__
            out = [new(FactEvent, (k, f, i - skip)) for k, f, i in out if i is not None and i >= skip]
        return out

    def take_error(self) -> BaseException | None:
        exc, self._error = self._error, None
        return exc


class NativeRecorder(_Recorder):
    """Callbacks in C (`native_trace.c`): the run makes no Python call for the trace.

    Raises:
        RuntimeError: the C recorder is not built (`native_trace.UNAVAILABLE` says why).
    """

    kind = "native"

    def __init__(self, env: Any, env_pointer: Any, trace_firings: bool, trace_facts: bool):
        from . import native_trace as nt

        if not nt.AVAILABLE:
            raise RuntimeError(f"the C trace recorder is unavailable: {nt.UNAVAILABLE}")
        super().__init__(env, env_pointer, trace_firings, trace_facts)
        self._nt = nt
        ffi, abi = nt.ffi, native.abi

        def c_pointer(abi_fn: Any, ctype: str) -> Any:  # a function of clipspy's library, as the C module's type
            return ffi.cast(ctype, int(abi.cast("uintptr_t", abi_fn)))

        t = self._t = ffi.new("wb_trace *")
        t.pp_form = c_pointer(native.lib.ActivationPPForm, "void (*)(void *, void *)")
        t.rule_name = c_pointer(native.lib.ActivationRuleName, "const char *(*)(void *)")
        t.sb_reset = c_pointer(native.lib.SBReset, "void (*)(void *)")
        t.fact_index = c_pointer(native.lib.FactIndex, "long long (*)(void *)")
        t.get_focus = c_pointer(native.lib.GetFocus, "void *(*)(void *)")
        t.module_name = c_pointer(native.lib.DefmoduleName, "const char *(*)(void *)")
        t.sb = ffi.cast("void *", int(abi.cast("uintptr_t", self._sb)))
        # Read each firing's basis from CLIPS's structures once that agreed with CLIPS's text
        # (native_trace.c checks each rule's first firing): only on the clipspy releases whose
        # CLIPS layouts native_trace.c declares.
        t.direct = 1 if direct_layout_known() else 0
        t.lexeme_contents_offset = clips_ffi_offsetof("CLIPSLexeme", "contents")
        self._names: list[str] = []  # rule names shown, by the C recorder's id (ids are never reused)
        from . import native_facts

        self._convert = native_facts.module  # records -> Python values in C, when built
        self._cast, self._clear = ffi.cast, nt.lib.wb_clear  # looked up once (hot path)

        def callback(name: str, kind: str) -> Any:  # a C function of the module, as clips_native's type
            return abi.cast(kind + " *", int(ffi.cast("uintptr_t", ffi.addressof(nt.lib, name))))

        fire = callback("wb_on_fire" if trace_firings else "wb_count_fire", "RuleFiredFunction")
        context = abi.cast("void *", int(ffi.cast("uintptr_t", t)))
        self._keep.append(t)
        self._register(
            fire, callback("wb_on_assert", "FactFunction"), callback("wb_on_retract", "FactFunction"), context
        )

    def _free_native(self) -> Any:
        from . import native_trace as nt

        return nt.lib.wb_free

    @property
    def fired(self) -> int:
        return self._t.fired

    @property
    def reads_directly(self) -> bool:
        """True while the bases of rules already checked against CLIPS's text are read from its
        structures (False: from CLIPS's text, for good)."""
        return self._t.direct == 1 and self._t.checked > 0

    def start(self) -> None:
        self._clear(self._t, _NATIVE_KEEP_BYTES)
        if self.trace_facts:
            self._t.recording = 1

    def stop(self) -> None:
        if self.trace_facts:
            self._t.recording = 0

    def take_firings(self, skip: int = 0) -> list[Firing]:
        """The run's firings, but the first `skip` (a runaway's trace is cut to its end)."""
        t = self._t
        size = t.firings_len
        if not size:
            return []
        names = self._names
        if len(names) < t.n_names:  # names first seen in this run
            string, name, shown = self._nt.ffi.string, self._nt.lib.wb_name, self._rule_names
            names += [shown(string(name(t, k)).decode("utf-8", "replace")) for k in range(len(names), t.n_names)]
        if self._convert is not None:  # in C (native_facts): a runaway run's trace is converted ~10x faster
            out = self._convert.firings(int(self._cast("uintptr_t", t.firings)), size, names, Firing, skip)
            t.firings_len = 0
            if len(out) + skip != t.fired:
                raise RuntimeError(f"the C trace recorder holds {len(out) + skip} firings for {t.fired} rules fired")
            return out
        flat = self._nt.ffi.unpack(t.firings, size)  # [rule name id, n, n fact ids] per firing
        t.firings_len = 0
        new = tuple.__new__
        out = []
        append = out.append
        i = 0
        while i < size:
            j = i + 2 + flat[i + 1]
            append(new(Firing, (names[flat[i]], tuple(flat[i + 2 : j]))))
            i = j
        if len(out) != t.fired:
            raise RuntimeError(f"the C trace recorder holds {len(out)} firings for {t.fired} rules fired")
        return out[skip:] if skip > 0 else out

    def take_events(self, skip: int = 0) -> list[FactEvent]:
        """The run's fact events; with `skip`, those of the firings after the first `skip`,
        their firing index less `skip` (matching `take_firings(skip)`)."""
        t = self._t
        n = t.n_events
        if not n:
            return []
        if self._convert is not None:
            out = self._convert.events(int(self._cast("uintptr_t", t.events)), n, _KINDS, FactEvent, skip)
            t.n_events = 0
            return out
        flat = self._nt.ffi.unpack(t.events, 3 * n)
        t.n_events = 0
        new, kinds = tuple.__new__, _KINDS
        if skip > 0:
            return [
                new(FactEvent, (kinds[flat[i]], flat[i + 1], flat[i + 2] - skip))
                for i in range(0, 3 * n, 3)
                if flat[i + 2] >= skip
            ]
        return [
            new(FactEvent, (kinds[flat[i]], flat[i + 1], None if flat[i + 2] < 0 else flat[i + 2]))
            for i in range(0, 3 * n, 3)
        ]

    def take_error(self) -> BaseException | None:
        t = self._t
        if t.out_of_memory:
            t.out_of_memory = 0
            return MemoryError("the C trace recorder could not grow its buffer")
        if t.bad_format:
            t.bad_format = 0
            return RuntimeError("CLIPS wrote an activation in an unexpected form (not '<salience> <rule>: <basis>')")
        return None


#: clipspy releases whose CLIPS (6.4) has the Activation and PartialMatch layouts `native_trace.c` declares.
DIRECT_LAYOUT_CLIPSPY = ("1.0.",)


@functools.lru_cache(maxsize=1)
def direct_layout_known() -> bool:
    """Whether the installed clipspy is one whose CLIPS structures the C recorder may read directly."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        release = version("clipspy")
    except PackageNotFoundError:
        return False
    return release.startswith(DIRECT_LAYOUT_CLIPSPY)


def clips_ffi_offsetof(struct: str, field: str) -> int:
    """Offset of `field` in one of clipspy's declared CLIPS structures."""
    from clips._clips import ffi

    return ffi.offsetof(struct, field)


def new_recorder(
    env: Any, env_pointer: Any, trace_firings: bool, trace_facts: bool, native: bool | None
) -> PythonRecorder | NativeRecorder:
    """The C recorder when `native` is True, or None and it is built; else the Python one.

    Raises:
        RuntimeError: `native` is True and the C recorder is not built.
    """
    if native is None:
        from . import native_trace as nt

        native = nt.AVAILABLE
    cls = NativeRecorder if native else PythonRecorder
    return cls(env, env_pointer, trace_firings, trace_facts)
