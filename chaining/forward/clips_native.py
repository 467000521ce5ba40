"""CLIPS 6.4 C API that clipspy 1.0.6 exports but does not declare: string builders, router
activation, the rule-firing and fact callbacks and the halt/error flags, bound with cffi's ABI
mode on clipspy's own extension module (the same library and environments, no second copy of
CLIPS). The one binding of that API in this project (`clips_runner`, `clips_halt` use it).

Why: with `(watch rules)` / `(watch facts)` CLIPS prints each firing and fact change in many
pieces, and clipspy makes one Python call per piece (`workbench bench rules` measured ~10 pieces
and 35 us per traced fact change). Taking the trace from CLIPS's callbacks instead costs one
Python call per firing or fact change, and the text of an activation is formatted by CLIPS
into a C string builder (`ActivationPPForm`), without Python.

Routers (how output reaches Python): CLIPS asks routers in priority order. Its string routers
("string", "stringBuilder", priority 0) serve string sources and string-builder destinations;
its "fileio" router (priority 0) serves the terminal streams. `ClipsRunner` deactivates
"fileio" and clipspy's Python error router and puts its own Python routers below priority 0,
so CLIPS reaches Python only for what a program prints, never for its internal formatting
or for the characters it parses.

Signatures are those of the CLIPS 6.4 headers (strngrtr.h, engine.h, factmngr.h, agenda.h,
utility.h). `bool` results are declared `unsigned char` (C `bool` is one byte; only its low byte
is defined).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cffi import FFI
from clips import _clips
from clips._clips import ffi as _clipspy_ffi

abi = FFI()
abi.cdef("""
typedef struct {
    void *sbEnv;
    char *contents;
    size_t bufferReset;
    size_t length;
    size_t bufferMaximum;
} StringBuilderView;

typedef void RuleFiredFunction(void *env, void *activation, void *context);
typedef void FactFunction(void *env, void *fact, void *context);
typedef void ModifyFunction(void *env, void *old_fact, void *new_fact, void *context);
typedef unsigned char RouterQueryFunction(void *env, const char *name, void *context);
typedef void RouterWriteFunction(void *env, const char *name, const char *text, void *context);
typedef int RouterReadFunction(void *env, const char *name, void *context);
typedef int RouterUnreadFunction(void *env, const char *name, int ch, void *context);
typedef void RouterExitFunction(void *env, int code, void *context);

void *CreateStringBuilder(void *env, size_t size);
void SBReset(void *sb);
void SBDispose(void *sb);
void SBAppend(void *sb, const char *text);
unsigned char ActivateRouter(void *env, const char *name);
unsigned char DeactivateRouter(void *env, const char *name);
unsigned char AddRouter(void *env, const char *name, int priority, RouterQueryFunction *query,
    RouterWriteFunction *write, RouterReadFunction *read, RouterUnreadFunction *unread,
    RouterExitFunction *exit, void *context);
unsigned char DeleteRouter(void *env, const char *name);
long long MemUsed(void *env);
void WriteString(void *env, const char *name, const char *text);
int ReadRouter(void *env, const char *name);
void *FindFunction(void *env, const char *name);
int CompleteCommand(const char *command);
unsigned char RouteCommand(void *env, const char *command, _Bool print_result);
void FlushPPBuffer(void *env);
void SetPPBufferStatus(void *env, _Bool on);
void FlushParsingMessages(void *env);
void CleanCurrentGarbageFrame(void *env, void *value);
void CallPeriodicTasks(void *env);

unsigned char AddBeforeRuleFiresFunction(void *env, const char *name, RuleFiredFunction *f, int priority,
                                         void *context);
unsigned char RemoveBeforeRuleFiresFunction(void *env, const char *name);
unsigned char AddAssertFunction(void *env, const char *name, FactFunction *f, int priority, void *context);
unsigned char RemoveAssertFunction(void *env, const char *name);
unsigned char AddRetractFunction(void *env, const char *name, FactFunction *f, int priority, void *context);
unsigned char RemoveRetractFunction(void *env, const char *name);
unsigned char AddModifyFunction(void *env, const char *name, ModifyFunction *f, int priority, void *context);
unsigned char RemoveModifyFunction(void *env, const char *name);

unsigned char GetHaltExecution(void *env);
unsigned char GetEvaluationError(void *env);
void SetHaltExecution(void *env, _Bool value);
void SetHaltRules(void *env, _Bool value);
void SetEvaluationError(void *env, _Bool value);
void ActivationPPForm(void *activation, void *sb);
const char *ActivationRuleName(void *activation);
void *GetFocus(void *env);
const char *DefmoduleName(void *module);
long long FactIndex(void *fact);
""")
lib = abi.dlopen(_clips.__file__)

# Callback priorities above 2000 (CLIPS reserves -2000..2000 for itself).
CALLBACK_PRIORITY = 3000


def env_pointer(env: Any) -> Any:
    """clipspy's `Environment *` (`Environment._env`) as a pointer of this module's FFI."""
    return abi.cast("void *", int(_clipspy_ffi.cast("uintptr_t", env)))


def callback(kind: str, fn: Callable, onerror: Callable | None = None) -> Any:
    """A C function pointer for `fn` (`kind`: "RuleFiredFunction", "FactFunction",
    "ModifyFunction" or one of the "Router...Function" types); keep the returned object alive while CLIPS may call it.

    An exception raised by `fn` cannot cross into CLIPS: `onerror(exc_type, exc, traceback)` is
    called instead (cffi's default prints it to stderr) and CLIPS carries on.
    """
    return abi.callback(kind + " *", fn, onerror=onerror)
