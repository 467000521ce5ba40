"""The content of each fact version a run ends: what an explanation shows for a premise that was later
modified or retracted (`chaining.explain.forward_derivation`).

The trace recorders (`clips_recorder`) keep fact ids only: CLIPS's `modify` keeps the fact's index, so
after the run the final working memory holds the last version and the earlier ones are gone. Every
version but the last ends in a retract (a `modify` is a retract and an assert of the same index), and in
CLIPS's retract callback the fact still holds that version's slots: this recorder reads them there.
Reading them costs a Python call and a read of the fact per retract, so the callback is installed only
for the evaluations that ask (`EngineConfig.trace_versions`, or `evaluate(trace_versions=True)`, what a
pipeline run asked to explain does) and removed after each: other runs never call into Python for it.

Usage (`ClipsRunner`): construct (registers nothing); per evaluation that asks, `start()` (installs the
callback) just before `Run`, `stop()` (removes it) after it, then `take(skip)`; `close()`.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

from clips._clips import ffi as _clipspy_ffi

from rules.facts import Fact

from . import clips_native as native

_NAME = b"workbench-versions"


def _remove(env_pointer: Any, installed: list, env: Any, callback: Any) -> None:
    """Remove the callback if it is installed (`stop`, `close` or the finalizer); `env` and `callback` are
    passed to keep the environment and the C function pointer CLIPS calls alive until then."""
    if installed:
        native.lib.RemoveRetractFunction(env_pointer, _NAME)
        installed.clear()


class _State:
    """What the callback shares with its recorder: the callback holds this, never the recorder, so the
    finalizer keeps the callback alive without keeping the recorder alive."""

    __slots__ = ("recording", "error", "versions")

    def __init__(self) -> None:
        self.recording = False
        self.error: BaseException | None = None
        self.versions: dict[int, list[tuple[int | None, Fact]]] = {}


class VersionRecorder:
    """Records `(firing index, fact as it was)` for each retract during a run, by fact id.

    Args:
        env: clipspy's `Environment`; env_pointer: its `Environment *` for `clips_native`.
        read: reads one fact by its `Fact *` (clipspy's ffi) into a `Fact` with its id
            (`WorkingMemory.read_one`).
        fired: the number of rules fired so far in this run (the trace recorder's count): a retract
            during firing k is recorded with k, one before the first firing with None.

    `start` raises RuntimeError when CLIPS refuses the callback.
    """

    def __init__(self, env: Any, env_pointer: Any, read: Callable[[Any], Fact], fired: Callable[[], int]):
        state = self._state = _State()
        versions = state.versions
        cast = _clipspy_ffi.cast
        abi_cast = native.abi.cast

        def on_retract(env_, fact, context):
            if state.recording:
                n = fired()
                old = read(cast("Fact *", int(abi_cast("uintptr_t", fact))))
                versions.setdefault(old.id, []).append((n - 1 if n else None, old))

        def onerror(exc_type, exc, tb):  # an exception cannot cross CLIPS: kept, raised after the run
            if state.error is None:
                state.error = exc

        self._ep, self._callback, self._installed = (
            env_pointer,
            native.callback("FactFunction", on_retract, onerror),
            [],
        )
        self._finalizer = weakref.finalize(self, _remove, env_pointer, self._installed, env, self._callback)

    def start(self) -> None:
        """Install the callback and record from now on."""
        state = self._state
        state.versions.clear()
        state.error = None
        if not self._installed:
            if not native.lib.AddRetractFunction(
                self._ep, _NAME, self._callback, native.CALLBACK_PRIORITY, native.abi.NULL
            ):
                raise RuntimeError("CLIPS refused the workbench-versions callback")
            self._installed.append(True)
        state.recording = True

    def stop(self) -> None:
        """Stop recording and remove the callback (idempotent)."""
        self._state.recording = False
        _remove(self._ep, self._installed, None, None)

    def take(self, skip: int = 0) -> dict[int, list[tuple[int | None, Fact]]]:
        """Fact id -> the versions the run ended, in order, each `(index of the firing that retracted or
        modified it, the fact as it was then)`; with `skip`, those of the firings after the first `skip`,
        their firing index less `skip` (as `take_events(skip)`).

        Raises:
            RuntimeError: reading a fact failed during the run.
        """
        state = self._state
        if state.error is not None:
            exc, state.error = state.error, None
            raise RuntimeError(f"recording fact versions failed during the run: {exc!r}") from exc
        out = dict(state.versions)
        state.versions.clear()
        if skip > 0:
            out = {
                fid: kept
                for fid, vs in out.items()
                if (kept := [(k - skip, f) for k, f in vs if k is not None and k >= skip])
            }
        return out

    def close(self) -> None:
        """Remove the callback (idempotent)."""
        self._finalizer()
