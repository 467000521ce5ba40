/* The constructs other than defrule (native_read.c), the whole text, and the module's functions
 * (`read`, `configure`, `source_digest`) of the C reader of rule text (see native_read.py). */
#include "native_read.h"

static const char *const SLOT_KINDS[] = {"slot", "multislot", "field", "multifield", NULL};
static const char *const OPAQUE_KINDS[] = {"defclass", "defgeneric", "defmethod", "definstances", "defmessage-handler",
                                           NULL};

#define FAIL_UNLESS(cond)                                                                                              \
    if (!(cond)) goto fail

/* slot_def after its "(" (lp): SLOT_KIND name slot_attr* ")" */
static PyObject *slot_def(rd_reader *r, const rd_tok *lp, PyObject *slots, PyObject *template_name) {
    PyObject *keyword = NULL, *name = NULL, *attrs = NULL, *multislot;
    if (!rd_word_in(r, SLOT_KINDS)) return rd_bail(r);
    multislot = rd_is(r, &r->tok, "multislot") || rd_is(r, &r->tok, "multifield") ? Py_True : Py_False;
    rd_next(r);
    FAIL_UNLESS(keyword = rd_text(r, r->last.start, r->last.end));
    FAIL_UNLESS(name = rd_name(r));
    switch (PyDict_Contains(slots, name)) { /* a duplicate slot: reported as the grammar's builder does */
    case -1:
        goto fail;
    case 1:
        if (r->dup == NULL) {
            r->dup = Py_BuildValue("(nnOO)", r->last.line, r->last.col, name, template_name);
            FAIL_UNLESS(r->dup);
        }
    }
    FAIL_UNLESS(attrs = PyList_New(0));
    while (r->tok.type == TK_LP) {
        rd_tok alp = r->tok;
        PyObject *attr_name, *values, *attr;
        rd_next(r);
        FAIL_UNLESS(attr_name = rd_name(r));
        if ((values = rd_items_to_rp(r, 0)) == NULL) {
            Py_DECREF(attr_name);
            goto fail;
        }
        attr = rd_node(N_SLOTATTR, 3, attr_name, values, rd_pos(&alp, &r->last));
        if (attr == NULL || PyList_Append(attrs, attr) < 0) {
            Py_XDECREF(attr);
            goto fail;
        }
        Py_DECREF(attr);
    }
    FAIL_UNLESS(rd_expect(r, TK_RP));
    return rd_node(N_SLOTDEF, 5, name, Py_NewRef(multislot), attrs, keyword, rd_pos(lp, &r->last));
fail:
    Py_XDECREF(keyword);
    Py_XDECREF(name);
    Py_XDECREF(attrs);
    return NULL;
}

static PyObject *deftemplate(rd_reader *r, const rd_tok *lp) {
    PyObject *name = NULL, *comment = NULL, *slots = NULL;
    FAIL_UNLESS((name = rd_name(r)) && (comment = rd_comment(r)) && (slots = PyDict_New()));
    while (r->tok.type == TK_LP) {
        rd_tok slp = r->tok;
        PyObject *slot;
        int failed;
        rd_next(r);
        FAIL_UNLESS(slot = slot_def(r, &slp, slots, name));
        failed = PyDict_SetItem(slots, rd_field(slot, N_SLOTDEF, 0), slot) < 0;
        Py_DECREF(slot);
        FAIL_UNLESS(!failed);
    }
    FAIL_UNLESS(rd_expect(r, TK_RP));
    return rd_node(N_TEMPLATE, 6, name, slots, comment, rd_pos(lp, &r->last), rd_text(r, lp->start, r->last.end),
                   PyDict_New());
fail:
    Py_XDECREF(name);
    Py_XDECREF(comment);
    Py_XDECREF(slots);
    return NULL;
}

/* deffacts and defmodule: name comment? sexp* ")" */
static PyObject *named_sexps(rd_reader *r, const rd_tok *lp, int cls) {
    PyObject *name = NULL, *comment = NULL, *items;
    FAIL_UNLESS((name = rd_name(r)) && (comment = rd_comment(r)) && (items = rd_items_to_rp(r, 1)));
    return rd_node(cls, 6, name, items, comment, rd_pos(lp, &r->last), rd_text(r, lp->start, r->last.end),
                   PyDict_New());
fail:
    Py_XDECREF(name);
    Py_XDECREF(comment);
    return NULL;
}

static PyObject *deffunction(rd_reader *r, const rd_tok *lp) {
    PyObject *name = NULL, *comment = NULL, *params = NULL, *wildcard = NULL, *body, *p;
    FAIL_UNLESS((name = rd_name(r)) && (comment = rd_comment(r)) && (params = PyList_New(0)));
    FAIL_UNLESS(rd_expect(r, TK_LP));
    while (r->tok.type == TK_WORD && r->tok.cls == W_SFVAR) {
        rd_next(r);
        p = rd_text(r, r->last.start + 1, r->last.end);
        if (p == NULL || PyList_Append(params, p) < 0) {
            Py_XDECREF(p);
            goto fail;
        }
        Py_DECREF(p);
    }
    if (r->tok.type == TK_WORD && r->tok.cls == W_MFVAR) {
        rd_next(r);
        FAIL_UNLESS(wildcard = rd_text(r, r->last.start + 2, r->last.end));
    }
    FAIL_UNLESS(rd_expect(r, TK_RP) && (body = rd_items_to_rp(r, 0)));
    return rd_node(N_FUNCTION, 8, name, params, wildcard ? wildcard : Py_NewRef(Py_None), body, comment,
                   rd_pos(lp, &r->last), rd_text(r, lp->start, r->last.end), PyDict_New());
fail:
    Py_XDECREF(name);
    Py_XDECREF(comment);
    Py_XDECREF(params);
    Py_XDECREF(wildcard);
    return NULL;
}

static PyObject *defglobal(rd_reader *r, const rd_tok *lp) {
    PyObject *module = NULL, *assigns = NULL;
    if (rd_plain_symbol(r)) FAIL_UNLESS(module = rd_name(r));
    FAIL_UNLESS(assigns = PyList_New(0));
    while (r->tok.type == TK_WORD && r->tok.cls == W_GLOBALVAR) {
        rd_tok var = r->tok;
        PyObject *gname, *value, *a;
        rd_next(r);
        if (!rd_is(r, &r->tok, "=")) {
            rd_bail(r);
            goto fail;
        }
        rd_next(r);
        FAIL_UNLESS(value = rd_item(r));
        if ((gname = rd_text(r, var.start + 2, var.end - 1)) == NULL) {
            Py_DECREF(value);
            goto fail;
        }
        a = rd_node(N_GASSIGN, 3, gname, value, rd_pos(&var, &r->last));
        if (a == NULL || PyList_Append(assigns, a) < 0) {
            Py_XDECREF(a);
            goto fail;
        }
        Py_DECREF(a);
    }
    FAIL_UNLESS(rd_expect(r, TK_RP));
    return rd_node(N_GLOBAL, 5, assigns, module ? module : Py_NewRef(Py_None), rd_pos(lp, &r->last),
                   rd_text(r, lp->start, r->last.end), PyDict_New());
fail:
    Py_XDECREF(module);
    Py_XDECREF(assigns);
    return NULL;
}

static PyObject *construct(rd_reader *r) {
    rd_tok lp = r->tok, kw;
    PyObject *kind, *items;
    rd_next(r);
    kw = r->tok;
    if (rd_is(r, &kw, "defrule")) return rd_next(r), rd_defrule(r, &lp);
    if (rd_is(r, &kw, "deftemplate")) return rd_next(r), deftemplate(r, &lp);
    if (rd_is(r, &kw, "deffacts")) return rd_next(r), named_sexps(r, &lp, N_FACTS);
    if (rd_is(r, &kw, "defmodule")) return rd_next(r), named_sexps(r, &lp, N_MODULE);
    if (rd_is(r, &kw, "deffunction")) return rd_next(r), deffunction(r, &lp);
    if (rd_is(r, &kw, "defglobal")) return rd_next(r), defglobal(r, &lp);
    if (!rd_word_in(r, OPAQUE_KINDS)) return rd_bail(r);
    rd_next(r);
    if ((kind = rd_text(r, kw.start, kw.end)) == NULL) return NULL;
    if ((items = rd_items_to_rp(r, 0)) == NULL) {
        Py_DECREF(kind);
        return NULL;
    }
    return rd_node(N_OPAQUE, 5, kind, items, rd_pos(&lp, &r->last), rd_text(r, lp.start, r->last.end), PyDict_New());
}

static int configured = 0;

/* read(text, pos, line, line_start) -> (constructs, stop, duplicate): the constructs from pos (on
 * line `line`, which starts at offset line_start) up to the first one this reader leaves to the
 * grammar: `stop` is where that one starts (its "(", or a token other than "(" between
 * constructs), or the end of the text when every construct was read. A deftemplate with a
 * duplicate slot ends the reading after it: `stop` is its end and `duplicate` (line, column,
 * slot, template) locates the second slot; otherwise `duplicate` is None. */
static PyObject *read_text(PyObject *self, PyObject *args) {
    rd_reader r;
    PyObject *text, *out = NULL, *c, *result = NULL;
    Py_ssize_t pos, line, line_start, stop;
    int gc_was_on;
    (void)self;
    if (!configured) {
        PyErr_SetString(PyExc_RuntimeError, "native reader: configure() first");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "Unnn", &text, &pos, &line, &line_start) || PyUnicode_READY(text) < 0) return NULL;
    if (pos < 0 || pos > PyUnicode_GET_LENGTH(text) || line_start < 0 || line_start > pos || line < 1) {
        PyErr_SetString(PyExc_ValueError, "read: span out of the text");
        return NULL;
    }
    memset(&r, 0, sizeof r);
    r.text = text;
    r.kind = PyUnicode_KIND(text);
    r.data = PyUnicode_DATA(text);
    r.n = PyUnicode_GET_LENGTH(text);
    r.i = pos;
    r.line = line;
    r.line_start = line_start;
    /* No collection while the tree grows (no Python code runs meanwhile, so no one else sees it
     * off): the allocations would start one every 700 objects, each walking the young tree. */
    gc_was_on = PyGC_Disable();
    rd_lex(&r);
    if ((out = PyList_New(0)) == NULL) goto done;
    for (;;) {
        stop = r.tok.start;
        if (r.tok.type != TK_LP) break;
        c = construct(&r);
        if (c == NULL) {
            Py_CLEAR(r.dup);
            if (r.bail && !PyErr_Occurred()) break;
            Py_CLEAR(out);
            goto done;
        }
        if (r.dup != NULL) { /* not kept: the file is refused */
            Py_DECREF(c);
            stop = r.last.end;
            break;
        }
        if (PyList_Append(out, c) < 0) {
            Py_DECREF(c);
            Py_CLEAR(out);
            goto done;
        }
        Py_DECREF(c);
    }
    result = Py_BuildValue("(NnN)", out, stop, r.dup ? r.dup : Py_NewRef(Py_None));
    r.dup = NULL;
    out = NULL;
done:
    Py_XDECREF(out);
    Py_XDECREF(r.dup);
    if (gc_was_on) PyGC_Enable();
    return result;
}

static PyObject *configure(PyObject *self, PyObject *args) {
    PyObject *classes, *nopos;
    (void)self;
    if (!PyArg_ParseTuple(args, "O!O", &PyTuple_Type, &classes, &nopos)) return NULL;
    configured = 0;
    if (rd_configure(classes, nopos) < 0) return NULL;
    configured = 1;
    Py_RETURN_NONE;
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
    {"read", read_text, METH_VARARGS, "read(text, pos, line, line_start) -> (constructs, stop, duplicate)"},
    {"configure", configure, METH_VARARGS, "configure(((class, field names)...), NOPOS)"},
    {"skip", rd_py_skip, METH_VARARGS, "skip(text, pos) -> end of whitespace and comments"},
    {"construct_end", rd_py_construct_end, METH_VARARGS, "construct_end(text, pos, max_depth) -> offset"},
    {"comments", rd_py_comments, METH_O, "comments(text) -> [Comment]"},
    {"scan_constructs", rd_py_scan_constructs, METH_VARARGS, "scan_constructs(text, pos, max_depth) -> (status, at)"},
    {"source_digest", source_digest, METH_NOARGS, "digest of the sources this was built from"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_native_read", NULL, -1, methods};

PyMODINIT_FUNC PyInit__native_read(void) { return PyModule_Create(&module); }
