/* The forward engine's trace recorder in C: CLIPS's before-rule-fires, assert and retract
 * callbacks, recording into buffers without calling Python (see native_trace.py).
 *
 * CLIPS functions are reached through pointers the caller stores in `wb_trace` (they live in
 * clipspy's extension module, which Python loads privately), so this file includes no CLIPS
 * header and links against nothing but libc. The one CLIPS layout it relies on is the head of
 * a StringBuilder (CLIPS 6.4 utility.h): { Environment *sbEnv; char *contents;
 * size_t bufferReset; size_t length; size_t bufferMaximum; }.
 * The build appends `wb_source_digest()`, the digest of this file, so a stale build is noticed.
 */
#include <stdlib.h>
#include <string.h>

typedef struct {
    void *sbEnv;
    char *contents;
    size_t bufferReset;
    size_t length;
    size_t bufferMaximum;
} wb_sb_head;

typedef struct wb_trace {
    /* set by the caller */
    void (*pp_form)(void *activation, void *sb);  /* ActivationPPForm */
    const char *(*rule_name)(void *activation);    /* ActivationRuleName */
    void (*sb_reset)(void *sb);                    /* SBReset */
    long long (*fact_index)(void *fact);           /* FactIndex */
    void *sb;                                      /* a CLIPS StringBuilder of this environment */
    int recording;                                 /* fact events are recorded only while set */
    /* written by the callbacks */
    long long fired;                               /* rules fired since wb_clear */
    long long *firings;                            /* per firing: rule name id, n, n fact ids */
    size_t firings_len, firings_cap;               /* in long longs */
    int bad_format;                                /* an activation's text was not "<salience> <rule>: <basis>" */
    long long *events;                             /* (kind 0 assert / 1 retract, fact index, firing index or -1) */
    size_t n_events, events_cap;                   /* n_events counts triples */
    int out_of_memory;                             /* a record was lost: the trace is incomplete */
    /* rule names: id -> a copy of the name; kept across runs (wb_clear keeps them) */
    char **names;
    size_t n_names, names_cap;
    const char **name_keys;                        /* hash table: CLIPS's name pointer ... */
    size_t *name_ids;                              /* ... -> id + 1 (0: empty slot) */
    size_t table_cap;                              /* a power of two, or 0 */
} wb_trace;

static int grow(void **buffer, size_t *cap, size_t need, size_t item) {
    size_t n = *cap ? *cap : 4096 / item;
    void *p;
    while (n < need) {
        if (n > ((size_t)-1) / 2 / item) return 0;
        n *= 2;
    }
    p = realloc(*buffer, n * item);
    if (p == NULL) return 0;
    *buffer = p;
    *cap = n;
    return 1;
}

static size_t slot_of(const char *key, size_t cap) {
    size_t h = (size_t)key;
    h ^= h >> 17;
    h *= (size_t)0x9E3779B97F4A7C15ull;
    return (h >> 7) & (cap - 1);
}

static int table_put(wb_trace *t, const char *key, size_t id) {
    size_t i;
    if (2 * (t->n_names + 1) > t->table_cap) {  /* keep the load under one half: rebuild twice as big */
        size_t cap = t->table_cap ? 2 * t->table_cap : 64, k;
        const char **keys = calloc(cap, sizeof *keys);
        size_t *ids = calloc(cap, sizeof *ids);
        if (keys == NULL || ids == NULL) {
            free(keys);
            free(ids);
            return 0;
        }
        for (k = 0; k < t->table_cap; k++) {
            if (t->name_ids[k]) {
                i = slot_of(t->name_keys[k], cap);
                while (ids[i]) i = (i + 1) & (cap - 1);
                keys[i] = t->name_keys[k];
                ids[i] = t->name_ids[k];
            }
        }
        free(t->name_keys);
        free(t->name_ids);
        t->name_keys = keys;
        t->name_ids = ids;
        t->table_cap = cap;
    }
    i = slot_of(key, t->table_cap);
    while (t->name_ids[i] && t->name_keys[i] != key) i = (i + 1) & (t->table_cap - 1);
    t->name_keys[i] = key;
    t->name_ids[i] = id + 1;
    return 1;
}

/* The id of a rule name: looked up by CLIPS's pointer and checked against the copy (a pointer
 * CLIPS freed and reused for another rule's name gets a new id). -1: out of memory. */
static long long name_id(wb_trace *t, const char *name) {
    size_t i, len;
    char *copy;
    if (t->table_cap) {
        i = slot_of(name, t->table_cap);
        while (t->name_ids[i]) {
            if (t->name_keys[i] == name) {
                size_t id = t->name_ids[i] - 1;
                if (strcmp(t->names[id], name) == 0) return (long long)id;
                break;  /* same address, another name: a new id replaces this entry */
            }
            i = (i + 1) & (t->table_cap - 1);
        }
    }
    if (t->n_names + 1 > t->names_cap && !grow((void **)&t->names, &t->names_cap, t->n_names + 1, sizeof(char *)))
        return -1;
    len = strlen(name);
    copy = malloc(len + 1);
    if (copy == NULL) return -1;
    memcpy(copy, name, len + 1);
    if (!table_put(t, name, t->n_names)) {
        free(copy);
        return -1;
    }
    t->names[t->n_names] = copy;
    return (long long)t->n_names++;
}

const char *wb_name(wb_trace *t, size_t id) { return id < t->n_names ? t->names[id] : NULL; }

/* One firing: CLIPS writes the activation ("<salience> <rule>: f-1,*,f-3", `ActivationPPForm`)
 * into the string builder; the rule name's id (`name_id`) and the basis's fact ids are appended
 * to `firings`. Items of the basis that are not
 * facts (`*` for not/exists/test, `[instance]` for object patterns) are skipped. */
void wb_on_fire(void *env, void *activation, void *context) {
    wb_trace *t = (wb_trace *)context;
    wb_sb_head *sb = (wb_sb_head *)t->sb;
    const char *name = t->rule_name(activation);
    const char *p, *end;
    size_t start, name_len = strlen(name);
    long long n = 0, id;
    (void)env;
    t->fired++;
    t->sb_reset(t->sb);
    t->pp_form(activation, t->sb);
    p = sb->contents;
    end = p + sb->length;
    /* "<salience>", spaces, the rule name, ':' and an optional space */
    while (p < end && *p != ' ') p++;
    while (p < end && *p == ' ') p++;
    if ((size_t)(end - p) < name_len + 1 || memcmp(p, name, name_len) != 0 || p[name_len] != ':') {
        t->bad_format = 1;
        return;
    }
    p += name_len + 1;
    if (p < end && *p == ' ') p++;
    start = t->firings_len;
    if (start + 2 + (size_t)(end - p) / 2 + 1 > t->firings_cap &&
        !grow((void **)&t->firings, &t->firings_cap, start + 2 + (size_t)(end - p) / 2 + 1, sizeof(long long))) {
        t->out_of_memory = 1;
        return;
    }
    id = name_id(t, name);
    if (id < 0) {
        t->out_of_memory = 1;
        return;
    }
    t->firings[start] = id;
    while (p < end) {  /* items separated by ',' */
        const char *item = p;
        if (*p == '[') {  /* an instance, "[name]": its name may hold ',' or "f-7"; it ends at "]," or "]" at the end */
            p++;
            while (p < end && !(*p == ']' && (p + 1 == end || p[1] == ','))) p++;
            if (p == end) {
                t->bad_format = 1;
                return;
            }
            p++;  /* the ']' */
        } else {
            while (p < end && *p != ',') p++;
        }
        if (p - item > 2 && item[0] == 'f' && item[1] == '-') {
            long long id = 0;
            const char *d;
            for (d = item + 2; d < p; d++) {
                if (*d < '0' || *d > '9') {
                    t->bad_format = 1;
                    return;
                }
                id = id * 10 + (*d - '0');
            }
            t->firings[start + 2 + n++] = id;
        }
        if (p < end) p++;  /* the ',' */
    }
    t->firings[start + 1] = n;
    t->firings_len = start + 2 + (size_t)n;
}

void wb_count_fire(void *env, void *activation, void *context) {
    (void)env;
    (void)activation;
    ((wb_trace *)context)->fired++;
}

static void record(wb_trace *t, long long kind, void *fact) {
    long long *e;
    if (!t->recording) return;
    if (t->n_events + 1 > t->events_cap && !grow((void **)&t->events, &t->events_cap, t->n_events + 1, 3 * sizeof(long long))) {
        t->out_of_memory = 1;
        return;
    }
    e = t->events + 3 * t->n_events++;
    e[0] = kind;
    e[1] = t->fact_index(fact);
    e[2] = t->fired ? t->fired - 1 : -1;
}

void wb_on_assert(void *env, void *fact, void *context) {
    (void)env;
    record((wb_trace *)context, 0, fact);
}

void wb_on_retract(void *env, void *fact, void *context) {
    (void)env;
    record((wb_trace *)context, 1, fact);
}

/* Forget what was recorded; buffers over `keep` bytes are freed (a long run's do not linger). */
void wb_clear(wb_trace *t, size_t keep) {
    t->fired = 0;
    t->firings_len = 0;
    t->n_events = 0;
    t->out_of_memory = 0;
    t->bad_format = 0;
    if (t->firings_cap * sizeof(long long) > keep) {
        free(t->firings);
        t->firings = NULL;
        t->firings_cap = 0;
    }
    if (t->events_cap * 3 * sizeof(long long) > keep) {
        free(t->events);
        t->events = NULL;
        t->events_cap = 0;
    }
}

void wb_free(wb_trace *t) {
    size_t i;
    for (i = 0; i < t->n_names; i++) free(t->names[i]);
    free(t->names);
    free(t->name_keys);
    free(t->name_ids);
    t->names = NULL;
    t->name_keys = NULL;
    t->name_ids = NULL;
    t->n_names = t->names_cap = t->table_cap = 0;
    free(t->firings);
    free(t->events);
    t->firings = NULL;
    t->events = NULL;
    t->firings_cap = t->events_cap = 0;
    t->firings_len = t->n_events = 0;
}
