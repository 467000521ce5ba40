/* AST objects of rules.ast built directly: each class is a `@dataclass(slots=True)` without
 * __post_init__, so an object is its type's allocation with every slot set, in the order of the
 * dataclass's fields. `configure` is given each class with its field names and checks each is a
 * plain object slot (a member descriptor of type Py_T_OBJECT_EX); anything else refuses the
 * reader (rules.native_read then leaves parsing to the grammar). */
#include "native_read.h"
#include <stdarg.h>
#include <structmember.h>

static PyTypeObject *types[N_COUNT];
static Py_ssize_t offsets[N_COUNT][RD_MAX_FIELDS];
static int counts[N_COUNT];
/* How many fields each class must have (rules/ast.py); a mismatch refuses the reader. */
static const int expected[N_COUNT] = {6, 3, 2, 4, 2, 2, 3, 8, 2, 2, 2, 2, 2, 2, 2, 3, 5, 6, 6, 15, 8, 3, 5, 6, 5, 2};

PyObject *rd_nopos, *rd_s_symbol, *rd_s_integer, *rd_s_variable, *rd_s_mf_variable, *rd_s_constant,
    *rd_s_predicate, *rd_s_return_value, *rd_s_empty;
static PyObject *s_string, *s_float, *s_instance_name, *s_global, *s_wildcard, *s_mf_wildcard;

static int intern(PyObject **slot, const char *s) {
    if (*slot == NULL) *slot = PyUnicode_InternFromString(s);
    return *slot != NULL;
}

int rd_configure(PyObject *classes, PyObject *nopos) {
    Py_ssize_t c, k;
    if (!PyTuple_Check(classes) || PyTuple_GET_SIZE(classes) != N_COUNT) {
        PyErr_SetString(PyExc_TypeError, "configure: a tuple of (class, field names) per AST class");
        return -1;
    }
    for (c = 0; c < N_COUNT; c++) {
        PyObject *entry = PyTuple_GET_ITEM(classes, c), *cls, *names;
        if (!PyArg_ParseTuple(entry, "O!O!", &PyType_Type, &cls, &PyTuple_Type, &names)) return -1;
        if (PyTuple_GET_SIZE(names) != expected[c]) {
            PyErr_Format(PyExc_TypeError, "configure: %R has %zd fields, the reader expects %d", cls,
                         PyTuple_GET_SIZE(names), expected[c]);
            return -1;
        }
        for (k = 0; k < PyTuple_GET_SIZE(names); k++) {
            PyObject *d = PyDict_GetItemWithError(((PyTypeObject *)cls)->tp_dict, PyTuple_GET_ITEM(names, k));
            PyMemberDef *m;
            if (d == NULL || !PyObject_TypeCheck(d, &PyMemberDescr_Type)) {
                if (!PyErr_Occurred()) PyErr_Format(PyExc_TypeError, "configure: %R.%S is not a slot", cls,
                                                    PyTuple_GET_ITEM(names, k));
                return -1;
            }
            m = ((PyMemberDescrObject *)d)->d_member;
            if (m->type != T_OBJECT_EX || (m->flags & READONLY)) {
                PyErr_Format(PyExc_TypeError, "configure: %R.%S is not a plain slot", cls, PyTuple_GET_ITEM(names, k));
                return -1;
            }
            offsets[c][k] = m->offset;
        }
        Py_INCREF(cls);
        Py_XSETREF(types[c], (PyTypeObject *)cls);
        counts[c] = (int)PyTuple_GET_SIZE(names);
    }
    Py_INCREF(nopos);
    Py_XSETREF(rd_nopos, nopos);
    if (!intern(&rd_s_symbol, "symbol") || !intern(&rd_s_integer, "integer") || !intern(&rd_s_variable, "variable") ||
        !intern(&rd_s_mf_variable, "mf_variable") || !intern(&rd_s_constant, "constant") ||
        !intern(&rd_s_predicate, "predicate") || !intern(&rd_s_return_value, "return_value") ||
        !intern(&rd_s_empty, "") || !intern(&s_string, "string") || !intern(&s_float, "float") ||
        !intern(&s_instance_name, "instance_name") || !intern(&s_global, "global") ||
        !intern(&s_wildcard, "wildcard") || !intern(&s_mf_wildcard, "mf_wildcard"))
        return -1;
    return 0;
}

PyObject *rd_node(int cls, int n, ...) {
    PyObject *vals[RD_MAX_FIELDS], *o = NULL;
    int k, missing = 0;
    va_list ap;
    va_start(ap, n);
    for (k = 0; k < n; k++) {
        vals[k] = va_arg(ap, PyObject *);
        if (vals[k] == NULL) missing = 1;
    }
    va_end(ap);
    if (!missing && n != counts[cls]) {
        PyErr_Format(PyExc_SystemError, "native reader: class %d given %d fields", cls, n);
        missing = 1;
    }
    if (!missing) o = types[cls]->tp_alloc(types[cls], 0);
    if (o == NULL) {
        for (k = 0; k < n; k++) Py_XDECREF(vals[k]);
        return NULL;
    }
    for (k = 0; k < n; k++) *(PyObject **)((char *)o + offsets[cls][k]) = vals[k];
    /* Leaves (positions, atoms, wildcards, comments) hold only strings and numbers: no cycle can
     * pass through them, so the cycle collector need not walk them (CPython untracks tuples and
     * dicts of atomic values the same way); the parse of a rule file makes hundreds of them. */
    if ((cls == N_POS || cls == N_ATOM || cls == N_WILD || cls == N_COMMENT) && PyObject_GC_IsTracked(o))
        PyObject_GC_UnTrack(o);
    return o;
}

PyObject *rd_field(PyObject *node, int cls, int k) {
    if (Py_TYPE(node) != types[cls]) return NULL;
    return *(PyObject **)((char *)node + offsets[cls][k]);
}

PyObject *rd_pos(const rd_tok *first, const rd_tok *last) {
    return rd_node(N_POS, 6, PyLong_FromSsize_t(first->line), PyLong_FromSsize_t(first->col),
                   PyLong_FromSsize_t(last->eline), PyLong_FromSsize_t(last->ecol), PyLong_FromSsize_t(first->start),
                   PyLong_FromSsize_t(last->end));
}

/* [+-]?\d+ of at most 18 digits after leading zeros (never out of range); else the grammar reads it */
static PyObject *integer(rd_reader *r, const rd_tok *t) {
    Py_ssize_t i = t->start;
    long long v = 0;
    int negative = 0, count = 0;
    Py_UCS4 c = RD_CH(r, i);
    if (c == '+' || c == '-') negative = c == '-', i++;
    for (; i < t->end; i++) {
        c = RD_CH(r, i);
        if (v == 0 && c == '0') continue;
        if (++count > 18) {
            r->bail = 1;
            return NULL;
        }
        v = v * 10 + (long long)(c - '0');
    }
    return PyLong_FromLongLong(negative ? -v : v);
}

static PyObject *number_float(rd_reader *r, const rd_tok *t) {
    PyObject *s = rd_text(r, t->start, t->end), *f;
    if (s == NULL) return NULL;
    f = PyFloat_FromString(s);
    Py_DECREF(s);
    return f;
}

/* An atom token (a word of class cls, or a string) as ast.Atom(kind, value, pos). */
PyObject *rd_atom(rd_reader *r, const rd_tok *t) {
    PyObject *kind, *value;
    Py_ssize_t s = t->start, e = t->end;
    if (t->type == TK_STRING) {
        kind = s_string;
        value = rd_unescape(r, t);
    } else {
        switch (t->cls) {
        case W_SYMBOL: case W_THEN: case W_COLON: case W_EQUALS:
            kind = rd_s_symbol, value = rd_text(r, s, e);
            break;
        case W_INTEGER:
            kind = rd_s_integer, value = integer(r, t);
            break;
        case W_FLOAT:
            kind = s_float, value = number_float(r, t);
            break;
        case W_INSTANCE:
            kind = s_instance_name, value = rd_text(r, s + 1, e - 1);
            break;
        case W_SFVAR:
            kind = rd_s_variable, value = rd_text(r, s + 1, e);
            break;
        case W_MFVAR:
            kind = rd_s_mf_variable, value = rd_text(r, s + 2, e);
            break;
        case W_GLOBALVAR:
            kind = s_global, value = rd_text(r, s + 2, e - 1);
            break;
        case W_SFWILD:
            kind = s_wildcard, value = Py_NewRef(rd_s_empty);
            break;
        case W_MFWILD:
            kind = s_mf_wildcard, value = Py_NewRef(rd_s_empty);
            break;
        default:
            r->bail = 1;
            return NULL;
        }
    }
    if (value == NULL) return NULL;
    return rd_node(N_ATOM, 3, Py_NewRef(kind), value, rd_pos(t, t));
}
