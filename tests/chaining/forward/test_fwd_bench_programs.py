"""The benchmark programs compute what their published descriptions say (not timed here)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import rules
from chaining.forward import ExpertaEngine, ForwardEngine
from cli.benchmarks._rules_experta import MANNERS_FACT_TYPES, WALTZ_FACT_TYPES, Manners, Waltz
from cli.benchmarks.rules import gating_facts, manners_facts, waltz_facts

BENCH = Path(__file__).resolve().parents[3] / "knowledge_bases" / "bench"


@pytest.mark.parametrize("guests", [16, 32])
def test_manners_seats_everyone_alternating_with_shared_hobbies(guests):
    facts = manners_facts(guests)
    result = ForwardEngine.from_knowledge_base(rules.load_knowledge_base([BENCH / "manners.clp"])).evaluate(facts)
    assert "Yes, we are done!!" in result.output
    seats = {int(s): name for name, s in re.findall(r"^(g\d+) (\d+)$", result.output, re.M)}
    assert sorted(seats) == list(range(1, guests + 1))
    assert len(set(seats.values())) == guests
    sex = {f["slots"]["name"]: f["slots"]["sex"] for f in facts if f["template"] == "guest"}
    hobbies: dict[str, set] = {}
    for f in facts:
        if f["template"] == "guest":
            hobbies.setdefault(f["slots"]["name"], set()).add(f["slots"]["hobby"])
    for s in range(1, guests):
        a, b = seats[s], seats[s + 1]
        assert sex[a] != sex[b] and hobbies[a] & hobbies[b], (s, a, b)


def test_manners_experta_agrees_on_small_instance():
    facts = manners_facts(8)
    clp = ForwardEngine.from_knowledge_base(rules.load_knowledge_base([BENCH / "manners.clp"])).evaluate(facts)
    exp = ExpertaEngine(Manners, fact_types=MANNERS_FACT_TYPES).evaluate(facts)
    assert "Yes, we are done!!" in exp.output and len(exp.firings) == len(clp.firings)


def test_waltz_labels_every_cube_uniquely_and_correctly():
    facts = waltz_facts(3)
    clp = ForwardEngine.from_knowledge_base(rules.load_knowledge_base([BENCH / "waltz.clp"])).evaluate(facts)
    exp = ExpertaEngine(Waltz, fact_types=WALTZ_FACT_TYPES).evaluate(facts)
    lines = sorted(clp.output.splitlines())
    assert lines == sorted(exp.output.splitlines())
    assert len(lines) == 21  # 7 junctions per cube, one labelling each
    expected = {"fork": "+ + +", "arrow": "out + in", "L": "out in"}  # convex cube, outline occluding
    for line in lines:
        _, kind, labels = line.split(" ", 2)
        assert labels == expected[kind]


def test_gating_inputs_exercise_every_rule():
    engine = ForwardEngine.from_knowledge_base(rules.load_knowledge_base([BENCH / "gating.clp"]))
    fired = set()
    for i in range(300):
        fired |= {f.rule for f in engine.evaluate(gating_facts(i)).firings}
    assert len(fired) == 10


# ---- the OPS5 benchmark suite's programs on its published data sets (knowledge_bases/bench/published/)

PUBLISHED = BENCH / "published"


def test_waltz_data_is_the_published_data_set():
    """CLIPS's examples/waltz/waltz25.fct (63,661 bytes, 1,973 facts) and waltz50.fct (126,361 bytes):
    same length, same first and last lines."""
    from cli.benchmarks._rules_published import waltz_fct

    text = waltz_fct(25)
    assert (len(text), text.count("\n")) == (63661, 1973)
    assert text.startswith(
        "(stage (value duplicate))\n(line (p1 50003) (p2 60003))\n(line (p1 30005) (p2 30006))\n"
        "(line (p1 80005) (p2 80006))\n(line (p1 50008) (p2 60008))\n(line (p1 0) (p2 20000))\n"
    )
    assert text.endswith(
        "(line (p1 3070011) (p2 3060010))\n(line (p1 2990003) (p2 3000003))\n(line (p1 2970005) (p2 2970006))\n"
        "(line (p1 3020005) (p2 3020006))\n(line (p1 2990008) (p2 3000008))\n"
    )
    assert len(waltz_fct(50)) == 126361


def test_manners_data_has_the_published_format():
    from cli.benchmarks._rules_published import manners_fct

    lines = manners_fct(32).splitlines()
    assert lines[-3:] == ["(last_seat (seat 32))", "(count (c 1))", "(context (state start))"]
    guests = [re.fullmatch(r"\(guest \(name (n\d+)\) \(sex ([mf])\) \(hobby (h[123])\)\)", ln) for ln in lines[:-3]]
    assert all(guests)
    per_guest: dict[str, set] = {}
    for m in guests:
        per_guest.setdefault((m.group(1), m.group(2)), set()).add(m.group(3))
    assert len(per_guest) == 32 and sum(sex == "m" for _, sex in per_guest) == 16
    assert all(2 <= len(h) <= 3 for h in per_guest.values())


def _clips_load_facts(program: Path, fct: str, tmp_path: Path) -> tuple[int, list]:
    """The published way: (load program) (reset) (load-facts data) (run), in real CLIPS."""
    import clips

    data = tmp_path / "data.fct"
    data.write_text(fct)
    env = clips.Environment()
    env.load(str(program))
    env.reset()
    env.load_facts(str(data))
    fired = env.run()
    return fired, sorted((f.template.name, sorted((k, str(v)) for k, v in dict(f).items())) for f in env.facts())


@pytest.mark.parametrize(("program", "size"), [("waltz", 2), ("waltz", 12), ("manners", 16), ("manners", 32)])
def test_published_programs_run_as_clips_runs_them(program, size, tmp_path):
    from cli.benchmarks import _rules_published as published

    facts = getattr(published, f"{program}_facts")(size)
    fct = getattr(published, f"{program}_fct")(size)
    path = PUBLISHED / f"{program}.clp"
    result = ForwardEngine.from_knowledge_base(rules.load_knowledge_base([path])).evaluate(facts)
    fired, clips_facts = _clips_load_facts(path, fct, tmp_path)
    assert len(result.firings) == fired
    assert sorted((f.template, sorted((k, str(v)) for k, v in f.slots.items())) for f in result.facts) == clips_facts
    if program == "waltz":
        edges = [f for f in result.facts if f.template == "edge"]
        assert len(edges) == 2 * (len(facts) - 1) and all(str(e.slots["plotted"]) == "t" for e in edges)
        assert [str(f.slots["value"]) for f in result.facts if f.template == "stage"] == ["done"]
    else:
        assert [str(f.slots["state"]) for f in result.facts if f.template == "context"] == ["print_results"]
