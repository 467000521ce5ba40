/* Expressions and field constraints of rule text (clips.lark's sexp, _item, field, term), read
 * for native_read.c; see there. */
#include "native_read.h"

PyObject *rd_bail(rd_reader *r) {
    r->bail = 1;
    return NULL;
}

/* A SYMBOL in a place where the grammar accepts only SYMBOL (a construct's, slot's or attribute's
 * name): plain symbols only (a number, a variable, `=>`, `<-`, `=`, `:` are left to the grammar). */
int rd_plain_symbol(rd_reader *r) {
    static const char *const special[] = {"<-", "=", ":", NULL};
    return r->tok.type == TK_WORD && r->tok.cls == W_SYMBOL && !rd_word_in(r, special);
}

PyObject *rd_name(rd_reader *r) {
    if (!rd_plain_symbol(r)) return rd_bail(r);
    rd_next(r);
    return rd_text(r, r->last.start, r->last.end);
}

PyObject *rd_comment(rd_reader *r) {
    if (r->tok.type != TK_STRING) return Py_NewRef(Py_None);
    rd_next(r);
    return rd_unescape(r, &r->last);
}

int rd_expect(rd_reader *r, int type) {
    if (r->tok.type != type) {
        r->bail = 1;
        return 0;
    }
    rd_next(r);
    return 1;
}


/* sexp: "(" _item* ")" at r->tok */
PyObject *rd_sexp(rd_reader *r) {
    rd_tok lp = r->tok;
    PyObject *items, *x;
    if (r->tok.type != TK_LP || ++r->depth > RD_MAX_DEPTH) return rd_bail(r);
    rd_next(r);
    if ((items = PyList_New(0)) == NULL) return NULL;
    while (r->tok.type != TK_RP) {
        if ((x = rd_item(r)) == NULL || PyList_Append(items, x) < 0) {
            Py_XDECREF(x);
            Py_DECREF(items);
            return NULL;
        }
        Py_DECREF(x);
    }
    rd_next(r);
    r->depth--;
    return rd_node(N_CALL, 2, items, rd_pos(&lp, &r->last));
}

PyObject *rd_item(rd_reader *r) {
    if (r->tok.type == TK_LP) return rd_sexp(r);
    if (r->tok.type != TK_STRING && (r->tok.type != TK_WORD || r->tok.cls == W_BAD)) return rd_bail(r);
    rd_next(r);
    return rd_atom(r, &r->last);
}

/* _item* or sexp* up to the construct's ")", consumed; a list */
PyObject *rd_items_to_rp(rd_reader *r, int only_sexp) {
    PyObject *out = PyList_New(0), *x;
    if (out == NULL) return NULL;
    while (r->tok.type != TK_RP) {
        x = only_sexp ? rd_sexp(r) : rd_item(r);
        if (x == NULL || PyList_Append(out, x) < 0) {
            Py_XDECREF(x);
            Py_DECREF(out);
            return NULL;
        }
        Py_DECREF(x);
    }
    rd_next(r);
    return out;
}

#define APPEND_OR_FAIL(list, x)                                                                                        \
    do {                                                                                                               \
        PyObject *x_ = (x);                                                                                            \
        if (x_ == NULL || PyList_Append((list), x_) < 0) {                                                             \
            Py_XDECREF(x_);                                                                                            \
            Py_DECREF(list);                                                                                           \
            return NULL;                                                                                               \
        }                                                                                                              \
        Py_DECREF(x_);                                                                                                 \
    } while (0)

/* term: NOT_CONN? single */
static PyObject *term(rd_reader *r) {
    rd_tok first = r->tok;
    PyObject *negated = Py_False, *value, *kind;
    int cls;
    if (r->tok.type == TK_TILDE) {
        negated = Py_True;
        rd_next(r);
    }
    cls = r->tok.type == TK_STRING ? W_SYMBOL : r->tok.cls;
    if (r->tok.type == TK_STRING || (r->tok.type == TK_WORD && (cls == W_SYMBOL || cls == W_INTEGER || cls == W_FLOAT ||
                                                               cls == W_INSTANCE || cls == W_SFVAR || cls == W_MFVAR))) {
        static const char *const special[] = {"=", ":", NULL};
        if (r->tok.type == TK_WORD && cls == W_SYMBOL && rd_word_in(r, special)) return rd_bail(r);
        kind = cls == W_SFVAR ? rd_s_variable : cls == W_MFVAR ? rd_s_mf_variable : rd_s_constant;
        rd_next(r);
        value = rd_atom(r, &r->last);
    } else if (r->tok.type == TK_WORD && (cls == W_COLON || cls == W_EQUALS)) {
        kind = cls == W_COLON ? rd_s_predicate : rd_s_return_value;
        rd_next(r);
        value = rd_sexp(r);
    } else {
        return rd_bail(r);
    }
    if (value == NULL) return NULL;
    /* A term of one atom spans what the atom spans: the same (frozen) Pos */
    return rd_node(N_TERM, 4, Py_NewRef(kind), value, Py_NewRef(negated),
                   negated == Py_False && rd_field(value, N_ATOM, 2) ? Py_NewRef(rd_field(value, N_ATOM, 2))
                                                                    : rd_pos(&first, &r->last));
}

/* field: SFWILD | MFWILD | or_constraint */
static PyObject *field(rd_reader *r) {
    rd_tok first = r->tok;
    PyObject *alts, *terms;
    if (r->tok.type == TK_WORD && (r->tok.cls == W_SFWILD || r->tok.cls == W_MFWILD)) {
        rd_next(r);
        return rd_node(N_WILD, 2, Py_NewRef(r->last.cls == W_MFWILD ? Py_True : Py_False), rd_pos(&first, &first));
    }
    if ((alts = PyList_New(0)) == NULL) return NULL;
    for (;;) {
        if ((terms = PyList_New(0)) == NULL) {
            Py_DECREF(alts);
            return NULL;
        }
        for (;;) {
            PyObject *t = term(r);
            if (t == NULL || PyList_Append(terms, t) < 0) {
                Py_XDECREF(t);
                Py_DECREF(terms);
                Py_DECREF(alts);
                return NULL;
            }
            Py_DECREF(t);
            if (r->tok.type != TK_AMP) break;
            rd_next(r);
        }
        APPEND_OR_FAIL(alts, terms);
        if (r->tok.type != TK_BAR) break;
        rd_next(r);
    }
    if (PyList_GET_SIZE(alts) == 1 && PyList_GET_SIZE(PyList_GET_ITEM(alts, 0)) == 1) /* spans its one term */
        return rd_node(N_FIELDC, 2, alts, Py_NewRef(rd_field(PyList_GET_ITEM(PyList_GET_ITEM(alts, 0), 0), N_TERM, 3)));
    return rd_node(N_FIELDC, 2, alts, rd_pos(&first, &r->last));
}

/* field* up to ")", consumed */
PyObject *rd_fields_to_rp(rd_reader *r) {
    PyObject *out = PyList_New(0);
    if (out == NULL) return NULL;
    while (r->tok.type != TK_RP) APPEND_OR_FAIL(out, field(r));
    rd_next(r);
    return out;
}

