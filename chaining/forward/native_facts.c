/* The common cases of `WorkingMemory`'s fact I/O in C (see native_facts.py).
 *
 * assert_facts: template facts whose slot values are ints, floats, plain symbol-like strings and
 * non-empty lists of those, asserted through CLIPS's fact builder. Anything else stops the loop
 * at that fact, and Python asserts it the checked way (which also words every error) before
 * calling again.
 * read_facts: template facts whose slots hold symbols, strings, integers, floats and multifields
 * of those, read into `rules.facts.Fact` values (a multifield as a tuple). Anything else (an
 * ordered fact, another type, an unknown template) stops the loop at that fact, and Python reads
 * it before calling again.
 *
 * CLIPS functions are reached through pointers (they live in clipspy's extension module, which
 * Python loads privately): this file includes no CLIPS header. CLIPSValue is one pointer.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <string.h>

/* Symbols and strings read back are kept per environment, by the address of CLIPS's lexeme (CLIPS
 * keeps one lexeme per distinct symbol or string while it is in use): a serving loop reads the
 * same few again and again. Direct-mapped; an entry counts only while its text equals the
 * lexeme's (an address CLIPS freed and reused for another text is a miss). */
#define WB_LEXEME_CACHE 2048
typedef struct {
    void *lexeme;
    PyObject *value; /* a Symbol or a String (strong reference), or NULL */
} wb_cached_lexeme;

typedef struct {
    void *env;  /* Environment * */
    void *fb;   /* FactBuilder * */
    void *mb;   /* MultifieldBuilder * */
    int (*set_template)(void *fb, const char *name);
    int (*put_slot)(void *fb, const char *slot, void **value);
    void *(*assert_fb)(void *fb);
    void (*abort_fb)(void *fb);
    long long (*fact_index)(void *fact);
    void *(*create_integer)(void *env, long long value);
    void *(*create_float)(void *env, double value);
    void *(*create_symbol)(void *env, const char *text);
    void *(*create_string)(void *env, const char *text);
    void (*mb_reset)(void *mb);
    void (*mb_append)(void *mb, void **value);
    void *(*mb_create)(void *mb);
    /* reading */
    void *(*next_fact)(void *env, void *fact);
    void *(*next_fact_in_template)(void *deftemplate, void *fact);
    void *(*fact_template)(void *fact);
    int (*get_slot)(void *fact, const char *slot, void **value);
    size_t lexeme_offset, integer_offset, float_offset;  /* of `contents` in CLIPSLexeme, CLIPSInteger, CLIPSFloat */
    size_t multifield_length_offset, multifield_contents_offset;  /* of `length`, `contents` in Multifield */
    wb_cached_lexeme lexemes[WB_LEXEME_CACHE];
} wb_assert_ctx;

static const char CAPSULE[] = "workbench.native_facts";
static PyObject *str_template, *str_slots, *str_id;

/* A string CLIPS reads back as one symbol, for sure: a letter, then letters, digits, '-' or '_'.
 * (Other symbols exist; they take Python's path, which knows the whole rule.) */
static int plain_symbol(const char *s, Py_ssize_t n) {
    Py_ssize_t i;
    unsigned char c;
    if (n == 0) return 0;
    c = (unsigned char)s[0];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))) return 0;
    for (i = 1; i < n; i++) {
        c = (unsigned char)s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_')) return 0;
    }
    return 1;
}

/* The Python types of CLIPS symbols and strings (`rules.facts.Symbol`, `String`) for one call. */
typedef struct {
    PyObject *symbol, *string;
} wb_types;

/* The CLIPS value of a scalar, or NULL (not for this path; no Python error is left set), as
 * `clips_values.ValueWriter` makes it: a `String` is a STRING, a `Symbol` a SYMBOL; a plain str is
 * a STRING in a slot that takes strings but not symbols (`strings`), else a SYMBOL when it is
 * plainly one (other plain strs take Python's path, which knows the whole rule). */
static void *scalar(wb_assert_ctx *c, PyObject *v, int strings, const wb_types *types) {
    PyTypeObject *type = Py_TYPE(v);
    if (PyLong_CheckExact(v)) {
        int overflow = 0;
        long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
        if (overflow || (x == -1 && PyErr_Occurred())) {
            PyErr_Clear();
            return NULL;
        }
        return c->create_integer(c->env, x);
    }
    if (PyFloat_CheckExact(v)) return c->create_float(c->env, PyFloat_AS_DOUBLE(v));
    if (type == &PyUnicode_Type || type == (PyTypeObject *)types->symbol || type == (PyTypeObject *)types->string) {
        Py_ssize_t n;
        const char *s = PyUnicode_AsUTF8AndSize(v, &n);
        if (s == NULL) {
            PyErr_Clear();
            return NULL;
        }
        if (type == (PyTypeObject *)types->string) return c->create_string(c->env, s);
        if (type == (PyTypeObject *)types->symbol) return c->create_symbol(c->env, s);
        if (strings) return c->create_string(c->env, s);
        return plain_symbol(s, n) ? c->create_symbol(c->env, s) : NULL;
    }
    return NULL;
}

/* Put every slot of `slots` into the builder; 0 when one is not for this path. `keys` maps the
 * slots that may hold symbols to their names as bytes, `string_keys` those that take strings but
 * not symbols. */
static int put_slots(wb_assert_ctx *c, PyObject *slots, PyObject *keys, PyObject *string_keys, const wb_types *types) {
    Py_ssize_t pos = 0;
    PyObject *name, *v;
    while (PyDict_Next(slots, &pos, &name, &v)) {
        PyObject *key;
        void *value;
        int strings = 0;
        /* Only exact str names: a str subclass's __eq__/__hash__ could run Python code that
         * changes `slots` while `v` (borrowed) is in use. Exact str, int, float, list and tuple
         * values below run none, nor do Symbol and String (str subclasses with no methods). */
        if (!PyUnicode_CheckExact(name)) return 0;
        key = PyDict_GetItemWithError(keys, name); /* borrowed */
        if (key == NULL && !PyErr_Occurred()) {
            key = PyDict_GetItemWithError(string_keys, name);
            strings = 1;
        }
        if (key == NULL || !PyBytes_CheckExact(key)) {
            PyErr_Clear();
            return 0;
        }
        if ((PyTuple_CheckExact(v) || PyList_CheckExact(v)) && PySequence_Fast_GET_SIZE(v) > 0) {
            Py_ssize_t i, n = PySequence_Fast_GET_SIZE(v);
            PyObject **items = PySequence_Fast_ITEMS(v);
            c->mb_reset(c->mb);
            for (i = 0; i < n; i++) {
                void *item = scalar(c, items[i], strings, types);
                if (item == NULL) return 0;
                c->mb_append(c->mb, &item);
            }
            value = c->mb_create(c->mb);
        } else {
            value = scalar(c, v, strings, types);
        }
        if (value == NULL || c->put_slot(c->fb, PyBytes_AS_STRING(key), &value) != 0) return 0;
    }
    return 1;
}

/* assert_facts(context, facts: list, start: int, templates: dict, out: list, symbol_type, string_type) -> int
 *
 * Asserts facts[start:] in order while they fit this path, appending each new fact's id to
 * `out`; returns the index of the first fact it did not assert (len(facts) when done).
 * `templates` maps a template name to (name as bytes, {slot name: slot name as bytes} for the
 * slots that may hold symbols, the same for the slots that take strings but not symbols). */
static PyObject *assert_facts(PyObject *self, PyObject *args) {
    PyObject *capsule, *facts, *templates, *out;
    Py_ssize_t start, i;
    wb_assert_ctx *c;
    wb_types types;
    (void)self;
    if (!PyArg_ParseTuple(args, "OO!nO!O!O!O!", &capsule, &PyList_Type, &facts, &start, &PyDict_Type, &templates,
                          &PyList_Type, &out, &PyType_Type, &types.symbol, &PyType_Type, &types.string))
        return NULL;
    c = (wb_assert_ctx *)PyCapsule_GetPointer(capsule, CAPSULE);
    if (c == NULL) return NULL;
    /* `template` and `slots` may be properties running Python code (a duck-typed fact), which
     * could change the list: the fact is held and the size read again at every step. */
    for (i = start < 0 ? 0 : start; i < PyList_GET_SIZE(facts); i++) {
        PyObject *fact = PyList_GET_ITEM(facts, i);
        PyObject *name, *slots, *entry, *id;
        void *ptr;
        int ok;
        Py_INCREF(fact);
        name = PyObject_GetAttr(fact, str_template);
        if (name == NULL || !PyUnicode_CheckExact(name)) {
            Py_XDECREF(name);
            Py_DECREF(fact);
            PyErr_Clear();
            break;
        }
        entry = PyDict_GetItemWithError(templates, name); /* borrowed */
        Py_DECREF(name);
        if (entry == NULL || !PyTuple_CheckExact(entry) || PyTuple_GET_SIZE(entry) != 3 ||
            !PyBytes_CheckExact(PyTuple_GET_ITEM(entry, 0)) || !PyDict_CheckExact(PyTuple_GET_ITEM(entry, 1)) ||
            !PyDict_CheckExact(PyTuple_GET_ITEM(entry, 2))) {
            Py_DECREF(fact);
            PyErr_Clear();
            break;
        }
        Py_INCREF(entry);  /* `templates` is ours, but hold what we read from it all the same */
        slots = PyObject_GetAttr(fact, str_slots);
        Py_DECREF(fact);
        if (slots == NULL) {
            Py_DECREF(entry);
            PyErr_Clear();
            break;
        }
        if (!PyDict_CheckExact(slots) || c->set_template(c->fb, PyBytes_AS_STRING(PyTuple_GET_ITEM(entry, 0))) != 0) {
            Py_DECREF(slots);
            Py_DECREF(entry);
            break;
        }
        ok = put_slots(c, slots, PyTuple_GET_ITEM(entry, 1), PyTuple_GET_ITEM(entry, 2), &types);
        Py_DECREF(slots);
        Py_DECREF(entry);
        if (!ok) {
            c->abort_fb(c->fb);
            break;
        }
        ptr = c->assert_fb(c->fb);
        if (ptr == NULL) {  /* a duplicate, or refused: Python asserts it again and says which */
            c->abort_fb(c->fb);
            break;
        }
        id = PyLong_FromLongLong(c->fact_index(ptr));
        if (id == NULL || PyList_Append(out, id) != 0) {
            Py_XDECREF(id);
            return NULL;
        }
        Py_DECREF(id);
    }
    return PyLong_FromSsize_t(i);
}

enum { WB_T_FLOAT = 0, WB_T_INTEGER = 1, WB_T_SYMBOL = 2, WB_T_STRING = 3, WB_T_MULTIFIELD = 4 };

static PyObject *slot_value(wb_assert_ctx *c, void *value, PyObject *symbol_type, PyObject *string_type);

/* A multifield of scalars as a tuple, or NULL with no error set when an element is not for this path. */
static PyObject *multifield_value(wb_assert_ctx *c, void *value, PyObject *symbol_type, PyObject *string_type) {
    size_t n = *(size_t *)((char *)value + c->multifield_length_offset), i;
    void **items = (void **)((char *)value + c->multifield_contents_offset);
    PyObject *out = PyTuple_New((Py_ssize_t)n);
    if (out == NULL) return NULL;
    for (i = 0; i < n; i++) {
        PyObject *v;
        if (items[i] == NULL || *(unsigned short *)items[i] == WB_T_MULTIFIELD) {
            Py_DECREF(out);
            return NULL;
        }
        v = slot_value(c, items[i], symbol_type, string_type);
        if (v == NULL) {
            Py_DECREF(out);
            return NULL; /* with the error, if one is set */
        }
        PyTuple_SET_ITEM(out, (Py_ssize_t)i, v);
    }
    /* Only numbers, symbols and strings inside: no cycle can pass through it (CPython's collector
     * would untrack it at its first pass; done now, it is never scanned). */
    PyObject_GC_UnTrack(out);
    return out;
}

static size_t lexeme_slot(const void *lexeme) {
    size_t h = (size_t)lexeme;
    h ^= h >> 17;
    h *= (size_t)0x9E3779B97F4A7C15ull;
    return (h >> 11) & (WB_LEXEME_CACHE - 1);
}

/* The Symbol or String for a CLIPS lexeme, from the cache when its text is the same. */
static PyObject *lexeme_value(wb_assert_ctx *c, void *lexeme, PyObject *type) {
    const char *text = *(const char **)((char *)lexeme + c->lexeme_offset);
    wb_cached_lexeme *e = &c->lexemes[lexeme_slot(lexeme)];
    PyObject *u, *out;
    if (e->lexeme == lexeme && e->value != NULL && Py_TYPE(e->value) == (PyTypeObject *)type) {
        const char *cached = PyUnicode_AsUTF8(e->value);
        if (cached != NULL && strcmp(cached, text) == 0) {
            Py_INCREF(e->value);
            return e->value;
        }
        PyErr_Clear();
    }
    u = PyUnicode_DecodeUTF8(text, (Py_ssize_t)strlen(text), "strict");
    if (u == NULL) {
        PyErr_Clear();
        return NULL;
    }
    out = PyObject_CallOneArg(type, u);
    Py_DECREF(u);
    if (out == NULL) return NULL; /* with an error set: raised */
    /* A str subclass instance without __dict__ or slots holds no reference: it cannot be part of
     * a cycle, and the cached ones live long, so the collector need not scan them. */
    if (PyObject_IS_GC(out) && ((PyTypeObject *)type)->tp_dictoffset == 0 && Py_SIZE(type) == 0)
        PyObject_GC_UnTrack(out);
    Py_XDECREF(e->value);
    Py_INCREF(out);
    e->lexeme = lexeme;
    e->value = out;
    return out;
}

/* The Python value of a slot, or NULL with no error set when it is not for this path. */
static PyObject *slot_value(wb_assert_ctx *c, void *value, PyObject *symbol_type, PyObject *string_type) {
    unsigned short type = *(unsigned short *)value;
    if (type == WB_T_MULTIFIELD) return multifield_value(c, value, symbol_type, string_type);
    if (type == WB_T_SYMBOL || type == WB_T_STRING)
        return lexeme_value(c, value, type == WB_T_SYMBOL ? symbol_type : string_type);
    if (type == WB_T_INTEGER) return PyLong_FromLongLong(*(long long *)((char *)value + c->integer_offset));
    if (type == WB_T_FLOAT) return PyFloat_FromDouble(*(double *)((char *)value + c->float_offset));
    return NULL;
}

/* The offset of a writable `__slots__` member of `type` holding an object (a dataclass field with
 * slots=True), or -1: then `read_facts` sets the attribute the generic way. */
static Py_ssize_t member_offset(PyObject *type, PyObject *name) {
    PyObject *d = PyObject_GetAttr(type, name);
    Py_ssize_t offset = -1;
    if (d == NULL) {
        PyErr_Clear();
        return -1;
    }
    if (Py_IS_TYPE(d, &PyMemberDescr_Type)) {
        PyMemberDef *m = ((PyMemberDescrObject *)d)->d_member;
        if (m->type == T_OBJECT_EX && !(m->flags & READONLY)) offset = m->offset;
    }
    Py_DECREF(d);
    return offset;
}

/* read_facts(context, fact: int, deftemplate: int, templates: dict, fact_type, symbol_type,
 *            string_type, out: list) -> int
 *
 * Reads facts from the one at address `fact` on (0: from the first), along the whole fact list
 * (`deftemplate` 0) or along one template's facts, appending `Fact`s to `out`; returns the
 * address of the first fact it did not read (0 when done). `templates` maps a template's address to (name, slot names as
 * str, slot names as bytes). */
static PyObject *read_facts(PyObject *self, PyObject *args) {
    PyObject *capsule, *templates, *fact_type, *symbol_type, *string_type, *out;
    unsigned long long fact_address, template_address;
    wb_assert_ctx *c;
    void *f, *tpl;
    Py_ssize_t offsets[3];
    int direct_members;
    (void)self;
    if (!PyArg_ParseTuple(args, "OKKO!OOOO!", &capsule, &fact_address, &template_address, &PyDict_Type, &templates,
                          &fact_type, &symbol_type, &string_type, &PyList_Type, &out))
        return NULL;
    c = (wb_assert_ctx *)PyCapsule_GetPointer(capsule, CAPSULE);
    if (c == NULL) return NULL;
    if (!PyType_Check(fact_type)) {
        PyErr_SetString(PyExc_TypeError, "read_facts: fact_type must be a type");
        return NULL;
    }
    offsets[0] = member_offset(fact_type, str_template);
    offsets[1] = member_offset(fact_type, str_slots);
    offsets[2] = member_offset(fact_type, str_id);
    direct_members = offsets[0] > 0 && offsets[1] > 0 && offsets[2] > 0;
    tpl = (void *)(size_t)template_address;
    f = (void *)(size_t)fact_address;
    if (f == NULL) f = tpl != NULL ? c->next_fact_in_template(tpl, NULL) : c->next_fact(c->env, NULL);
    while (f != NULL) {
        PyObject *key = PyLong_FromVoidPtr(c->fact_template(f)), *entry, *names, *keys, *slots, *fact, *id;
        Py_ssize_t k, n;
        if (key == NULL) return NULL;
        entry = PyDict_GetItemWithError(templates, key); /* borrowed */
        Py_DECREF(key);
        if (entry == NULL) {
            if (PyErr_Occurred()) return NULL;
            break;
        }
        if (!PyTuple_CheckExact(entry) || PyTuple_GET_SIZE(entry) != 3) break;
        names = PyTuple_GET_ITEM(entry, 1);
        keys = PyTuple_GET_ITEM(entry, 2);
        if (!PyTuple_CheckExact(names) || !PyTuple_CheckExact(keys) || PyTuple_GET_SIZE(names) != PyTuple_GET_SIZE(keys)) break;
        n = PyTuple_GET_SIZE(names);
        slots = PyDict_New();
        if (slots == NULL) return NULL;
        for (k = 0; k < n; k++) {
            void *value = NULL;
            PyObject *v, *slot_key = PyTuple_GET_ITEM(keys, k);
            if (!PyBytes_CheckExact(slot_key) || c->get_slot(f, PyBytes_AS_STRING(slot_key), &value) != 0 || value == NULL) break;
            v = slot_value(c, value, symbol_type, string_type);
            if (v == NULL) {
                if (PyErr_Occurred()) {
                    Py_DECREF(slots);
                    return NULL;
                }
                break;
            }
            if (PyDict_SetItem(slots, PyTuple_GET_ITEM(names, k), v) != 0) {
                Py_DECREF(v);
                Py_DECREF(slots);
                return NULL;
            }
            Py_DECREF(v);
        }
        if (k < n) {  /* a value for Python to read */
            Py_DECREF(slots);
            break;
        }
        fact = ((PyTypeObject *)fact_type)->tp_alloc((PyTypeObject *)fact_type, 0);
        id = PyLong_FromLongLong(c->fact_index(f));
        if (fact != NULL && id != NULL && direct_members) { /* what the members' setters do, without the look-ups */
            PyObject *values[3] = {PyTuple_GET_ITEM(entry, 0), slots, id};
            int m;
            for (m = 0; m < 3; m++) {
                Py_INCREF(values[m]);
                *(PyObject **)((char *)fact + offsets[m]) = values[m];
            }
        }
        if (fact == NULL || id == NULL ||
            (!direct_members && (PyObject_GenericSetAttr(fact, str_template, PyTuple_GET_ITEM(entry, 0)) != 0 ||
                                 PyObject_GenericSetAttr(fact, str_slots, slots) != 0 ||
                                 PyObject_GenericSetAttr(fact, str_id, id) != 0)) ||
            PyList_Append(out, fact) != 0) {
            Py_XDECREF(fact);
            Py_XDECREF(id);
            Py_DECREF(slots);
            return NULL;
        }
        Py_DECREF(fact);
        Py_DECREF(id);
        Py_DECREF(slots);
        f = tpl != NULL ? c->next_fact_in_template(tpl, f) : c->next_fact(c->env, f);
    }
    return PyLong_FromVoidPtr(f);
}

/* A tuple of `type` (a tuple subclass such as a NamedTuple) holding `a` and `b` (references stolen). */
static PyObject *pair(PyObject *type, PyObject *a, PyObject *b) {
    PyObject *t = ((PyTypeObject *)type)->tp_alloc((PyTypeObject *)type, 2);
    if (t == NULL) {
        Py_DECREF(a);
        Py_DECREF(b);
        return NULL;
    }
    PyTuple_SET_ITEM(t, 0, a);
    PyTuple_SET_ITEM(t, 1, b);
    return t;
}

/* firings(address, length, names: list, Firing, skip) -> list
 *
 * The C trace recorder's firing records (native_trace.c: per firing a rule name id, n, n fact
 * ids; `length` long longs at `address`) as `Firing(rule, facts)` values, but the first `skip`. */
static PyObject *firings(PyObject *self, PyObject *args) {
    unsigned long long address;
    Py_ssize_t length, i = 0, skip, seen = 0;
    PyObject *names, *type, *out;
    const long long *r;
    (void)self;
    if (!PyArg_ParseTuple(args, "KnO!O!n", &address, &length, &PyList_Type, &names, &PyType_Type, &type, &skip)) return NULL;
    if (length < 0 || skip < 0) {
        PyErr_SetString(PyExc_ValueError, "firings: length and skip must be >= 0");
        return NULL;
    }
    if (!PyType_IsSubtype((PyTypeObject *)type, &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError, "firings: the record type must be a tuple subclass");
        return NULL;
    }
    r = (const long long *)(size_t)address;
    out = PyList_New(0);
    if (out == NULL) return NULL;
    while (i < length) {
        long long id, n, k;
        PyObject *facts, *name, *item;
        if (i + 2 > length) goto corrupt;
        id = r[i];
        n = r[i + 1];
        if (id < 0 || id >= PyList_GET_SIZE(names) || n < 0 || n > length - i - 2) goto corrupt;
        if (seen++ < skip) {
            i += 2 + (Py_ssize_t)n;
            continue;
        }
        facts = PyTuple_New((Py_ssize_t)n);
        if (facts == NULL) goto fail;
        for (k = 0; k < n; k++) {
            PyObject *fid = PyLong_FromLongLong(r[i + 2 + k]);
            if (fid == NULL) {
                Py_DECREF(facts);
                goto fail;
            }
            PyTuple_SET_ITEM(facts, (Py_ssize_t)k, fid);
        }
        name = PyList_GET_ITEM(names, (Py_ssize_t)id);
        Py_INCREF(name);
        PyObject_GC_UnTrack(facts); /* ints only */
        item = pair(type, name, facts);
        if (item == NULL) goto fail;
        if (Py_TYPE(item)->tp_dictoffset == 0) PyObject_GC_UnTrack(item); /* a str and a tuple of ints: no cycle */
        if (PyList_Append(out, item) != 0) {
            Py_DECREF(item);
            goto fail;
        }
        Py_DECREF(item);
        i += 2 + (Py_ssize_t)n;
    }
    return out;
corrupt:
    PyErr_SetString(PyExc_RuntimeError, "the C trace recorder's firing records are corrupt");
fail:
    Py_DECREF(out);
    return NULL;
}

/* events(address, count, kinds: tuple of 2 str, FactEvent, skip) -> list
 *
 * The C trace recorder's fact events (`count` triples of long longs at `address`: kind 0/1,
 * fact id, firing index or -1) as `FactEvent(kind, fact, firing)` values. With `skip` > 0 the
 * first `skip` firings were dropped: only events of later firings are kept, their firing
 * index less `skip`. */
static PyObject *events(PyObject *self, PyObject *args) {
    unsigned long long address;
    Py_ssize_t count, i, skip, kept = 0;
    PyObject *kinds, *type, *out;
    const long long *r;
    (void)self;
    if (!PyArg_ParseTuple(args, "KnO!O!n", &address, &count, &PyTuple_Type, &kinds, &PyType_Type, &type, &skip)) return NULL;
    if (count < 0 || skip < 0) {
        PyErr_SetString(PyExc_ValueError, "events: count and skip must be >= 0");
        return NULL;
    }
    if (PyTuple_GET_SIZE(kinds) != 2 || !PyType_IsSubtype((PyTypeObject *)type, &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError, "events: needs 2 kinds and a tuple subclass");
        return NULL;
    }
    r = (const long long *)(size_t)address;
    out = PyList_New(count);
    if (out == NULL) return NULL;
    for (i = 0; i < count; i++) {
        const long long *e = r + 3 * i;
        PyObject *kind, *fact, *firing, *item;
        if (e[0] != 0 && e[0] != 1) {
            PyErr_SetString(PyExc_RuntimeError, "the C trace recorder's fact events are corrupt");
            Py_DECREF(out);
            return NULL;
        }
        if (skip > 0 && e[2] < skip) continue;
        kind = PyTuple_GET_ITEM(kinds, (Py_ssize_t)e[0]);
        Py_INCREF(kind);
        fact = PyLong_FromLongLong(e[1]);
        if (e[2] < 0) {
            firing = Py_None;
            Py_INCREF(firing);
        } else {
            firing = PyLong_FromLongLong(e[2] - skip);
        }
        item = ((PyTypeObject *)type)->tp_alloc((PyTypeObject *)type, 3);
        if (fact == NULL || firing == NULL || item == NULL) {
            Py_DECREF(kind);
            Py_XDECREF(fact);
            Py_XDECREF(firing);
            Py_XDECREF(item);
            Py_DECREF(out);
            return NULL;
        }
        PyTuple_SET_ITEM(item, 0, kind);
        PyTuple_SET_ITEM(item, 1, fact);
        PyTuple_SET_ITEM(item, 2, firing);
        if (Py_TYPE(item)->tp_dictoffset == 0) PyObject_GC_UnTrack(item); /* a str and numbers: no cycle */
        PyList_SET_ITEM(out, kept++, item);
    }
    if (kept < count && PyList_SetSlice(out, kept, count, NULL) != 0) {  /* the unused tail (NULL items) */
        Py_DECREF(out);
        return NULL;
    }
    return out;
}

/* context(env, fact builder, multifield builder, functions: tuple of 16 addresses,
 *         offsets: (lexeme, integer, float, multifield length, multifield contents)) -> capsule */
static PyObject *context(PyObject *self, PyObject *args) {
    unsigned long long env, fb, mb;
    PyObject *fns, *capsule;
    void **slots[16];
    wb_assert_ctx *c;
    Py_ssize_t k;
    (void)self;
    Py_ssize_t lexeme_offset, integer_offset, float_offset, mf_length_offset, mf_contents_offset;
    if (!PyArg_ParseTuple(args, "KKKO!(nnnnn)", &env, &fb, &mb, &PyTuple_Type, &fns, &lexeme_offset, &integer_offset,
                          &float_offset, &mf_length_offset, &mf_contents_offset))
        return NULL;
    if (PyTuple_GET_SIZE(fns) != 16) {
        PyErr_SetString(PyExc_ValueError, "context() needs the addresses of 16 CLIPS functions");
        return NULL;
    }
    c = PyMem_Calloc(1, sizeof *c);
    if (c == NULL) return PyErr_NoMemory();
    c->env = (void *)(size_t)env;
    c->fb = (void *)(size_t)fb;
    c->mb = (void *)(size_t)mb;
    slots[0] = (void **)&c->set_template;
    slots[1] = (void **)&c->put_slot;
    slots[2] = (void **)&c->assert_fb;
    slots[3] = (void **)&c->abort_fb;
    slots[4] = (void **)&c->fact_index;
    slots[5] = (void **)&c->create_integer;
    slots[6] = (void **)&c->create_float;
    slots[7] = (void **)&c->create_symbol;
    slots[8] = (void **)&c->mb_reset;
    slots[9] = (void **)&c->mb_append;
    slots[10] = (void **)&c->mb_create;
    slots[11] = (void **)&c->next_fact;
    slots[12] = (void **)&c->next_fact_in_template;
    slots[13] = (void **)&c->fact_template;
    slots[14] = (void **)&c->get_slot;
    slots[15] = (void **)&c->create_string;
    c->lexeme_offset = (size_t)lexeme_offset;
    c->integer_offset = (size_t)integer_offset;
    c->float_offset = (size_t)float_offset;
    c->multifield_length_offset = (size_t)mf_length_offset;
    c->multifield_contents_offset = (size_t)mf_contents_offset;
    for (k = 0; k < 16; k++) {
        unsigned long long address = PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(fns, k));
        if (PyErr_Occurred() || address == 0) {
            PyMem_Free(c);
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "a CLIPS function address is 0");
            return NULL;
        }
        *slots[k] = (void *)(size_t)address;
    }
    capsule = PyCapsule_New(c, CAPSULE, NULL);
    if (capsule == NULL) PyMem_Free(c);
    return capsule;
}

static void free_context(PyObject *capsule) {
    wb_assert_ctx *c = (wb_assert_ctx *)PyCapsule_GetPointer(capsule, CAPSULE);
    size_t k;
    if (c == NULL) return;
    for (k = 0; k < WB_LEXEME_CACHE; k++) Py_CLEAR(c->lexemes[k].value);
    PyMem_Free(c);
}

static PyObject *context_with_destructor(PyObject *self, PyObject *args) {
    PyObject *capsule = context(self, args);
    if (capsule != NULL && PyCapsule_SetDestructor(capsule, free_context) != 0) {
        Py_DECREF(capsule);
        return NULL;
    }
    return capsule;
}

static PyObject *source_digest(PyObject *self, PyObject *args) {
    (void)self;
    (void)args;
#ifdef WB_SOURCE_DIGEST
    return PyUnicode_FromString(WB_SOURCE_DIGEST);
#else
    return PyUnicode_FromString("");
#endif
}

static PyMethodDef methods[] = {
    {"context", context_with_destructor, METH_VARARGS, "context(env, fb, mb, functions) -> capsule"},
    {"assert_facts", assert_facts, METH_VARARGS, "assert_facts(context, facts, start, templates, out) -> index"},
    {"firings", firings, METH_VARARGS, "firings(address, length, names, Firing) -> list of Firing"},
    {"events", events, METH_VARARGS, "events(address, count, kinds, FactEvent) -> list of FactEvent"},
    {"read_facts", read_facts, METH_VARARGS, "read_facts(context, fact, deftemplate, templates, Fact, Symbol, String, out) -> address"},
    {"source_digest", source_digest, METH_NOARGS, "digest of the native_facts.c this was built from"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_native_facts", NULL, -1, methods};

PyMODINIT_FUNC PyInit__native_facts(void) {
    str_template = PyUnicode_InternFromString("template");
    str_slots = PyUnicode_InternFromString("slots");
    str_id = PyUnicode_InternFromString("id");
    if (str_template == NULL || str_slots == NULL || str_id == NULL) return NULL;
    return PyModule_Create(&module);
}
