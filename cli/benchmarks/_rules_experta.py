"""experta versions of the rule benchmarks (Miss Manners, gating), rule for rule as the .clp files.

Kept apart from `rules.py` (the benchmark driver) so that tests can import the engines.
Template names with hyphens map to these classes through `FACT_TYPES`.
"""

from __future__ import annotations

from experta import AS, EXISTS, MATCH, NOT, TEST, DefFacts, Fact, KnowledgeEngine, L, Rule

# --- gating (knowledge_bases/bench/gating.clp) -----------------------------------------------


class request(Fact):
    pass


class prediction(Fact):
    pass


class user(Fact):
    pass


class limits(Fact):
    pass


class clock(Fact):
    pass


class decision(Fact):
    pass


class gate(Fact):
    pass


class Gating(KnowledgeEngine):
    @Rule(prediction(score=MATCH.s), limits(**{"min-score": MATCH.m}), TEST(lambda s, m: s < m))
    def low_confidence(self):
        self.declare(decision(action="review", reason="low-confidence"))

    @Rule(prediction(label="spam", score=MATCH.s), TEST(lambda s: s >= 0.9))
    def spam(self):
        self.declare(decision(action="block", reason="spam"))

    @Rule(request(length=MATCH.n), limits(**{"max-length": MATCH.m}), TEST(lambda n, m: n > m))
    def too_long(self):
        self.declare(decision(action="truncate", reason="too-long"))

    @Rule(user(strikes=MATCH.k), TEST(lambda k: k >= 3))
    def repeat_offender(self):
        self.declare(decision(action="block", reason="abuse"))

    @Rule(user(tier="gold"), NOT(decision(action="block")))
    def vip(self):
        self.declare(decision(action="fast-lane", reason="vip"))

    @Rule(clock(hour=MATCH.h), TEST(lambda h: h < 6), request(channel="email"))
    def night_email(self):
        self.declare(decision(action="defer", reason="night"))

    @Rule(request(channel="api"), prediction(label="ham"))
    def api_ham(self):
        self.declare(decision(action="allow", reason="api"))

    @Rule(decision(action="block"), AS.d << decision(action=L("fast-lane") | L("allow")), salience=10)
    def block_wins(self, d):
        self.retract(d)

    @Rule(NOT(decision()), salience=-10)
    def default_allow(self):
        self.declare(decision(action="allow", reason="default"))

    @Rule(EXISTS(decision(action=L("block") | L("review") | L("defer"))), salience=-20)
    def close_gate(self):
        self.declare(gate(open="no"))


GATING_FACT_TYPES = {c.__name__: c for c in (request, prediction, user, limits, clock, decision, gate)}


# --- Miss Manners (knowledge_bases/bench/manners.clp) ----------------------------------------


class guest(Fact):
    pass


class LastSeat(Fact):
    pass


class seating(Fact):
    pass


class context(Fact):
    pass


class path(Fact):
    pass


class chosen(Fact):
    pass


class count(Fact):
    pass


MANNERS_FACT_TYPES = {
    "guest": guest,
    "last-seat": LastSeat,
    "seating": seating,
    "context": context,
    "path": path,
    "chosen": chosen,
    "count": count,
}


def _s(**slots):
    return {k.replace("_", "-"): v for k, v in slots.items()}


class Manners(KnowledgeEngine):
    @DefFacts()
    def manners_start(self):
        yield context(state="start")
        yield count(c=1)

    @Rule(AS.ctx << context(state="start"), guest(name=MATCH.n), AS.cnt << count(c=MATCH.c))
    def assign_first_seat(self, ctx, cnt, n, c):
        self.declare(seating(**_s(seat1=1, name1=n, name2=n, seat2=1, id=c, pid=0, path_done="yes")))
        self.declare(path(id=c, name=n, seat=1))
        self.modify(cnt, c=c + 1)
        print(f"seat 1 {n} {n} 1 {c} 0 1")
        self.modify(ctx, state="assign-seats")

    @Rule(
        AS.ctx << context(state="assign-seats"),
        seating(
            **{
                "seat1": MATCH.seat1,
                "seat2": MATCH.seat2,
                "name2": MATCH.n2,
                "id": MATCH.id,
                "pid": MATCH.pid,
                "path-done": "yes",
            }
        ),
        guest(name=MATCH.n2, sex=MATCH.s1, hobby=MATCH.h1),
        guest(name=MATCH.g2, sex=~MATCH.s1, hobby=MATCH.h1),
        AS.cnt << count(c=MATCH.c),
        NOT(path(id=MATCH.id, name=MATCH.g2)),
        NOT(chosen(id=MATCH.id, name=MATCH.g2, hobby=MATCH.h1)),
    )
    def find_seating(self, ctx, cnt, seat2, n2, id, g2, h1, c, **_):
        self.declare(seating(**_s(seat1=seat2, name1=n2, name2=g2, seat2=seat2 + 1, id=c, pid=id, path_done="no")))
        self.declare(path(id=c, name=g2, seat=seat2 + 1))
        self.declare(chosen(id=id, name=g2, hobby=h1))
        self.modify(cnt, c=c + 1)
        print(f"seat {seat2} {n2} {g2}")
        self.modify(ctx, state="make-path")

    @Rule(
        context(state="make-path"),
        seating(**{"id": MATCH.id, "pid": MATCH.pid, "path-done": "no"}),
        path(id=MATCH.pid, name=MATCH.n1, seat=MATCH.s),
        NOT(path(id=MATCH.id, name=MATCH.n1)),
    )
    def make_path(self, id, n1, s, **_):
        self.declare(path(id=id, name=n1, seat=s))

    @Rule(AS.ctx << context(state="make-path"), AS.st << seating(**{"path-done": "no"}), salience=-1)
    def path_done(self, ctx, st):
        self.modify(st, **{"path-done": "yes"})
        self.modify(ctx, state="check-done")

    @Rule(AS.ctx << context(state="check-done"), LastSeat(seat=MATCH.last), seating(seat2=MATCH.last))
    def are_we_done(self, ctx, last):
        print("\nYes, we are done!!")
        self.modify(ctx, state="print-results")

    @Rule(AS.ctx << context(state="check-done"), salience=-1)
    def continue_(self, ctx):
        self.modify(ctx, state="assign-seats")

    @Rule(
        context(state="print-results"),
        seating(id=MATCH.id, seat2=MATCH.s2),
        LastSeat(seat=MATCH.s2),
        AS.p << path(id=MATCH.id, name=MATCH.n, seat=MATCH.s),
    )
    def print_results(self, p, n, s, **_):
        self.retract(p)
        print(f"{n} {s}")

    @Rule(context(state="print-results"), salience=-1)
    def all_done(self):
        self.halt()


# --- Waltz (knowledge_bases/bench/waltz.clp) ---------------------------------------------------
# experta has no multifield patterns and no predicate over several variables inside `NOT`, so
# each candidate labelling is spread over one `elabel` fact per line (its label towards that
# neighbour and the label the neighbour must show); "no neighbour labelling agrees" becomes a
# plain negated pattern. Same algorithm (Waltz filtering), same result.


class junction(Fact):
    pass


class border(Fact):
    pass


class catalog(Fact):
    pass


class candidate(Fact):
    pass


class elabel(Fact):
    pass


PARTNER = {"+": "+", "-": "-", "out": "in", "in": "out"}

CATALOG = {
    "L": [("out", "in"), ("in", "out"), ("+", "out"), ("in", "+"), ("-", "in"), ("out", "-")],
    "fork": [("+", "+", "+"), ("-", "-", "-"), ("out", "-", "in"), ("in", "out", "-"), ("-", "in", "out")],
    "arrow": [("out", "+", "in"), ("+", "-", "+"), ("-", "+", "-")],
    "T": [("in", "+", "out"), ("in", "-", "out"), ("in", "in", "out"), ("in", "out", "out")],
}

WALTZ_FACT_TYPES = {"junction": junction, "border": border}


class Waltz(KnowledgeEngine):
    @DefFacts()
    def catalogue(self):
        self._by_cid: dict[int, list] = {}
        self._next_cid = 0
        for t, entries in CATALOG.items():
            for labels in entries:
                yield catalog(type=t, labels=labels)

    def _drop(self, cid):
        for f in self._by_cid.pop(cid, []):
            self.retract(f)

    @Rule(junction(id=MATCH.j, type=MATCH.t, edges=MATCH.e), catalog(type=MATCH.t, labels=MATCH.labels), salience=20)
    def initial_labellings(self, j, e, labels):
        self._next_cid += 1
        cid = self._next_cid
        made = [self.declare(candidate(junction=j, labels=tuple(labels), cid=cid))]
        for k, x in zip(e, labels):
            made.append(self.declare(elabel(junction=j, to=k, label=x, partner=PARTNER[x], cid=cid)))
        self._by_cid[cid] = made

    @Rule(
        border(**{"from": MATCH.j, "to": MATCH.k}),
        elabel(junction=MATCH.j, to=MATCH.k, label=~L("out"), cid=MATCH.cid),
        salience=10,
    )
    def outline_leaving(self, cid, **_):
        self._drop(cid)

    @Rule(
        border(**{"from": MATCH.k, "to": MATCH.j}),
        elabel(junction=MATCH.j, to=MATCH.k, label=~L("in"), cid=MATCH.cid),
        salience=10,
    )
    def outline_arriving(self, cid, **_):
        self._drop(cid)

    @Rule(
        elabel(junction=MATCH.j, to=MATCH.k, partner=MATCH.p, cid=MATCH.cid),
        NOT(elabel(junction=MATCH.k, to=MATCH.j, label=MATCH.p)),
    )
    def waltz_filter(self, cid, **_):
        self._drop(cid)

    @Rule(junction(id=MATCH.j, type=MATCH.t), candidate(junction=MATCH.j, labels=MATCH.labels), salience=-10)
    def report(self, j, t, labels):
        print(f"{j} {t} {' '.join(labels)}")

    @Rule(junction(id=MATCH.j), NOT(candidate(junction=MATCH.j)), salience=-20)
    def impossible(self, j):
        print(f"{j} has no consistent labelling")
