"""Rule sets of the .clp corpus and shipped knowledge bases, written again as experta engines.

Each engine mirrors one .clp file rule for rule (same names, same salience); the tests check
that both backends reach the same conclusions on the same inputs.
"""

from __future__ import annotations

from experta import AS, MATCH, NOT, TEST, DefFacts, Fact, KnowledgeEngine, L, Rule

# --- tests/chaining/programs/01_family.clp ---------------------------------------------------


class parent(Fact):
    pass


class male(Fact):
    pass


class female(Fact):
    pass


class grandparent(Fact):
    pass


class sibling(Fact):
    pass


class Family(KnowledgeEngine):
    @DefFacts()
    def family(self):
        for p, c in (("tom", "bob"), ("tom", "liz"), ("bob", "ann"), ("bob", "pat"), ("pat", "jim")):
            yield parent(p, c)
        for m in ("tom", "bob", "jim"):
            yield male(m)
        for f in ("liz", "ann", "pat"):
            yield female(f)

    @Rule(parent(MATCH.g, MATCH.p), parent(MATCH.p, MATCH.c))
    def find_grandparent(self, g, c):
        self.declare(grandparent(g, c))
        print(f"{g} is a grandparent of {c}")

    @Rule(parent(MATCH.p, MATCH.a), parent(MATCH.p, MATCH.b), TEST(lambda a, b: a != b))
    def find_sibling(self, a, b):
        self.declare(sibling(a, b))

    @Rule(sibling(MATCH.a, MATCH.b), male(MATCH.a))
    def brother(self, a, b):
        print(f"{a} is a brother of {b}")


# --- knowledge_bases/animals.clp --------------------------------------------------------------


class observation(Fact):
    pass


class AnimalClass(Fact):
    """The template `class` (a Python keyword, so mapped by name in the tests)."""


class identified(Fact):
    pass


def _obs(attribute, value="yes"):
    return observation(attribute=attribute, value=value)


class Animals(KnowledgeEngine):
    @Rule(_obs("hair"))
    def mammal_by_hair(self):
        self.declare(AnimalClass(name="mammal"))

    @Rule(_obs("gives-milk"))
    def mammal_by_milk(self):
        self.declare(AnimalClass(name="mammal"))

    @Rule(_obs("feathers"))
    def bird_by_feathers(self):
        self.declare(AnimalClass(name="bird"))

    @Rule(_obs("flies"), _obs("lays-eggs"))
    def bird_by_flight_and_eggs(self):
        self.declare(AnimalClass(name="bird"))

    @Rule(AnimalClass(name="mammal"), _obs("eats-meat"))
    def carnivore_by_diet(self):
        self.declare(AnimalClass(name="carnivore"))

    @Rule(AnimalClass(name="mammal"), _obs("pointed-teeth"), _obs("claws"), _obs("forward-eyes"))
    def carnivore_by_anatomy(self):
        self.declare(AnimalClass(name="carnivore"))

    @Rule(AnimalClass(name="mammal"), observation(attribute=L("hoofs") | L("chews-cud"), value="yes"))
    def ungulate(self):
        self.declare(AnimalClass(name="ungulate"))

    @Rule(AnimalClass(name="carnivore"), _obs("colour", "tawny"), _obs("markings", "dark-spots"))
    def cheetah(self):
        self.declare(identified(animal="cheetah"))

    @Rule(AnimalClass(name="carnivore"), _obs("colour", "tawny"), _obs("markings", "black-stripes"))
    def tiger(self):
        self.declare(identified(animal="tiger"))

    @Rule(AnimalClass(name="ungulate"), _obs("long-neck"), _obs("markings", "dark-spots"))
    def giraffe(self):
        self.declare(identified(animal="giraffe"))

    @Rule(AnimalClass(name="ungulate"), _obs("markings", "black-stripes"))
    def zebra(self):
        self.declare(identified(animal="zebra"))

    @Rule(AnimalClass(name="bird"), _obs("flies", "no"), _obs("long-neck"), _obs("colour", "black-and-white"))
    def ostrich(self):
        self.declare(identified(animal="ostrich"))

    @Rule(AnimalClass(name="bird"), _obs("flies", "no"), _obs("swims"), _obs("colour", "black-and-white"))
    def penguin(self):
        self.declare(identified(animal="penguin"))

    @Rule(
        AnimalClass(name="bird"),
        _obs("flies"),
        observation(attribute="wingspan-m", value=MATCH.w),
        TEST(lambda w: isinstance(w, (int, float)) and w >= 2.5),
    )
    def albatross(self, w):
        self.declare(identified(animal="albatross"))

    @Rule(identified(animal=MATCH.a), salience=-10)
    def report(self, a):
        print(f"identified: {a}")


# --- tests/chaining/programs/13_fact_address.clp ----------------------------------------------


class account(Fact):
    pass


class transfer(Fact):
    pass


class Bank(KnowledgeEngine):
    @DefFacts()
    def bank(self):
        yield account(owner="ann", balance=100)
        yield account(owner="bob", balance=20)
        yield transfer("ann", "bob", 30)
        yield transfer("bob", "ann", 500)

    @Rule(
        AS.t << transfer(MATCH.frm, MATCH.to, MATCH.amount),
        AS.a << account(owner=MATCH.frm, balance=MATCH.b),
        TEST(lambda b, amount: b >= amount),
        AS.c << account(owner=MATCH.to, balance=MATCH.cb),
    )
    def do_transfer(self, t, a, c, frm, to, amount, b, cb):
        self.retract(t)
        self.modify(a, balance=b - amount)
        self.modify(c, balance=cb + amount)
        print(f"moved {amount} from {frm} to {to}")

    @Rule(AS.t << transfer(MATCH.frm, MATCH.to, MATCH.amount), salience=-1)
    def refuse(self, t, frm, amount):
        self.retract(t)
        print(f"refused {amount} from {frm}")


# --- tests/chaining/programs/23_long_chain.clp -------------------------------------------------


class counter(Fact):
    pass


class done(Fact):
    pass


class LongChain(KnowledgeEngine):
    @DefFacts()
    def start(self):
        yield counter(0)

    @Rule(AS.c << counter(MATCH.n), TEST(lambda n: n < 600))
    def step(self, c, n):
        self.retract(c)
        self.declare(counter(n + 1))
        if n % 100 == 0:
            print(f"at {n}")

    @Rule(counter(600))
    def done(self):
        print("done")


__all__ = ["Family", "Animals", "AnimalClass", "Bank", "LongChain", "NOT"]
