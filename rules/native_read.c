/* Rule text read in C (see native_read.py): the constructs of clips.lark by recursive descent,
 * built into rules.ast objects with the positions the grammar's tree gives them (a node spans
 * its first to its last token, parentheses included). Conservative: any text whose reading is
 * not certain to be the grammar's (a syntax error, a word the grammar's lexer reads otherwise in
 * that place, an integer near CLIPS's 64-bit range, nesting past the limits) sets `bail`, and the
 * caller has the grammar read that construct alone, then reads on from its end (rules.parser). tests/rules/test_native_read.py checks both
 * give the same AST on every rule file in the repository and on mutations of them. */
#include "native_read.h"

#define MAX_CE_DEPTH 100 /* rules.parser.MAX_CE_NESTING */

static const char *const CE_KEYWORDS[] = {"test", "not", "and", "or", "exists", "forall", "logical", NULL};

static PyObject *ce(rd_reader *r);

/* pattern_ce from `first` (its "(", or the address variable), r->tok at the relation name */
static PyObject *pattern(rd_reader *r, const rd_tok *first, PyObject *address, PyObject *address_pos) {
    rd_tok name_tok = r->tok;
    PyObject *template = NULL, *slots = NULL, *fields = NULL, *ordered = Py_True;
    if (!(rd_plain_symbol(r) || rd_is(r, &r->tok, "<-")) || rd_word_in(r, CE_KEYWORDS) || rd_is(r, &r->tok, "declare")) {
        rd_bail(r);
        goto fail;
    }
    rd_next(r);
    if ((template = rd_text(r, name_tok.start, name_tok.end)) == NULL || (slots = PyList_New(0)) == NULL) goto fail;
    if (r->tok.type == TK_LP) {
        ordered = Py_False;
        while (r->tok.type == TK_LP) {
            rd_tok slp = r->tok;
            PyObject *slot_name, *slot_fields, *sc;
            rd_next(r);
            if ((slot_name = rd_name(r)) == NULL) goto fail;
            if ((slot_fields = rd_fields_to_rp(r)) == NULL) {
                Py_DECREF(slot_name);
                goto fail;
            }
            sc = rd_node(N_SLOTC, 3, slot_name, slot_fields, rd_pos(&slp, &r->last));
            if (sc == NULL || PyList_Append(slots, sc) < 0) {
                Py_XDECREF(sc);
                goto fail;
            }
            Py_DECREF(sc);
        }
        if (!rd_expect(r, TK_RP) || (fields = PyList_New(0)) == NULL) goto fail;
    } else if ((fields = rd_fields_to_rp(r)) == NULL) {
        goto fail;
    }
    return rd_node(N_PATTERN, 8, template, slots, fields, Py_NewRef(ordered), address ? address : Py_NewRef(Py_None),
                   rd_pos(first, &r->last), rd_pos(&name_tok, &name_tok),
                   address_pos ? address_pos : Py_NewRef(rd_nopos));
fail:
    Py_XDECREF(template);
    Py_XDECREF(slots);
    Py_XDECREF(fields);
    Py_XDECREF(address);
    Py_XDECREF(address_pos);
    return NULL;
}

/* a conditional element after its "(" (lp), r->tok at the word that follows */
static PyObject *ce_after_lp(rd_reader *r, const rd_tok *lp) {
    static const int kinds[] = {N_TEST, N_NOT, N_AND, N_OR, N_EXISTS, N_FORALL, N_LOGICAL};
    PyObject *ces, *x;
    int k;
    for (k = 0; CE_KEYWORDS[k]; k++)
        if (rd_is(r, &r->tok, CE_KEYWORDS[k])) break;
    if (CE_KEYWORDS[k] == NULL) return pattern(r, lp, NULL, NULL);
    rd_next(r);
    if (kinds[k] == N_TEST) {
        if ((x = rd_sexp(r)) == NULL) return NULL;
        if (!rd_expect(r, TK_RP)) {
            Py_DECREF(x);
            return NULL;
        }
        return rd_node(N_TEST, 2, x, rd_pos(lp, &r->last));
    }
    if (++r->ce_depth > MAX_CE_DEPTH) return rd_bail(r);
    if (kinds[k] == N_NOT) {
        if ((x = ce(r)) == NULL) return NULL;
        if (!rd_expect(r, TK_RP)) {
            Py_DECREF(x);
            return NULL;
        }
        r->ce_depth--;
        return rd_node(N_NOT, 2, x, rd_pos(lp, &r->last));
    }
    if ((ces = PyList_New(0)) == NULL) return NULL;
    do {
        x = ce(r);
        if (x == NULL || PyList_Append(ces, x) < 0) {
            Py_XDECREF(x);
            Py_DECREF(ces);
            return NULL;
        }
        Py_DECREF(x);
    } while (r->tok.type != TK_RP);
    rd_next(r);
    r->ce_depth--;
    return rd_node(kinds[k], 2, ces, rd_pos(lp, &r->last));
}

/* _ce: "(" ... or SFVAR ARROW pattern_ce */
static PyObject *ce(rd_reader *r) {
    rd_tok first = r->tok;
    PyObject *address, *address_pos;
    if (r->tok.type == TK_LP) {
        rd_next(r);
        return ce_after_lp(r, &first);
    }
    if (r->tok.type != TK_WORD || r->tok.cls != W_SFVAR) return rd_bail(r);
    rd_next(r);
    if (!rd_is(r, &r->tok, "<-")) return rd_bail(r);
    rd_next(r);
    if (!rd_expect(r, TK_LP)) return NULL;
    address = rd_text(r, first.start + 1, first.end);
    address_pos = address ? rd_pos(&first, &first) : NULL;
    if (address_pos == NULL) {
        Py_XDECREF(address);
        return NULL;
    }
    return pattern(r, &first, address, address_pos);
}

/* salience and auto-focus from the declarations, as rules.parser's builder reads them */
static void declared(PyObject *declarations, PyObject **salience, PyObject **auto_focus) {
    Py_ssize_t k;
    for (k = 0; k < PyList_GET_SIZE(declarations); k++) {
        PyObject *items = rd_field(PyList_GET_ITEM(declarations, k), N_CALL, 0), *head, *arg, *v;
        if (items == NULL || PyList_GET_SIZE(items) != 2) continue;
        head = PyList_GET_ITEM(items, 0);
        arg = PyList_GET_ITEM(items, 1);
        if (rd_field(head, N_ATOM, 0) != rd_s_symbol) continue;
        v = rd_field(head, N_ATOM, 1);
        if (PyUnicode_CompareWithASCIIString(v, "salience") == 0) {
            PyObject *value = rd_field(arg, N_ATOM, 0) == rd_s_integer ? rd_field(arg, N_ATOM, 1) : arg;
            Py_SETREF(*salience, Py_NewRef(value));
        } else if (PyUnicode_CompareWithASCIIString(v, "auto-focus") == 0 && rd_field(arg, N_ATOM, 0) != NULL) {
            PyObject *av = rd_field(arg, N_ATOM, 1);
            int on = PyUnicode_Check(av) && PyUnicode_CompareWithASCIIString(av, "TRUE") == 0;
            Py_SETREF(*auto_focus, Py_NewRef(on ? Py_True : Py_False));
        }
    }
}

PyObject *rd_defrule(rd_reader *r, const rd_tok *lp) {
    PyObject *name = NULL, *comment = NULL, *decls = NULL, *lhs = NULL, *rhs = NULL, *x, *salience, *focus;
    if ((name = rd_name(r)) == NULL || (comment = rd_comment(r)) == NULL || (lhs = PyList_New(0)) == NULL) goto fail;
    if (r->tok.type == TK_LP) {
        rd_tok lp2 = r->tok;
        rd_next(r);
        if (rd_is(r, &r->tok, "declare")) {
            rd_next(r);
            if ((decls = rd_items_to_rp(r, 1)) == NULL) goto fail;
        } else {
            x = ce_after_lp(r, &lp2);
            if (x == NULL || PyList_Append(lhs, x) < 0) {
                Py_XDECREF(x);
                goto fail;
            }
            Py_DECREF(x);
        }
    }
    if (decls == NULL && (decls = PyList_New(0)) == NULL) goto fail;
    while (!(r->tok.type == TK_WORD && r->tok.cls == W_THEN)) {
        x = ce(r);
        if (x == NULL || PyList_Append(lhs, x) < 0) {
            Py_XDECREF(x);
            goto fail;
        }
        Py_DECREF(x);
    }
    rd_next(r);
    if ((rhs = rd_items_to_rp(r, 0)) == NULL) goto fail;
    salience = PyLong_FromLong(0);
    focus = Py_NewRef(Py_False);
    declared(decls, &salience, &focus);
    return rd_node(N_RULE, 15, name, lhs, rhs, comment, salience, focus, decls, rd_pos(lp, &r->last),
                   rd_text(r, lp->start, r->last.end), PyDict_New(), PySet_New(NULL), PySet_New(NULL),
                   PySet_New(NULL), PySet_New(NULL), PyUnicode_FromString("MAIN"));
fail:
    Py_XDECREF(name);
    Py_XDECREF(comment);
    Py_XDECREF(decls);
    Py_XDECREF(lhs);
    Py_XDECREF(rhs);
    return NULL;
}
