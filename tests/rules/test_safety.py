"""A knowledge base cannot run a shell command or write a file unless unsafe use is allowed."""

from __future__ import annotations

from pathlib import Path

import clips
import pytest

import rules


def _programs(marker: Path) -> dict[str, str]:
    m = str(marker)
    return {
        "system": f'(defrule r => (system "touch {m}"))',
        "open": f'(defrule r => (open "{m}" out "w") (printout out "x" crlf) (close out))',
        "save-facts": f'(defrule r => (save-facts "{m}"))',
        "dribble": f'(deffacts f (x (dribble-on "{m}")))',
        "eval": f'(defrule r => (eval "(system \\"touch {m}\\")"))',
        "build": f'(defrule r => (build "(defrule q => (system \\"touch {m}\\"))"))',
        "funcall": f'(defrule r => (funcall system "touch {m}"))',
        "in-deffunction": f'(deffunction go () (system "touch {m}"))\n(defrule r => (go))',
        "in-global": f'(defglobal ?*x* = (system "touch {m}"))',
    }


@pytest.mark.parametrize("kind", list(_programs(Path("/x"))))
def test_unsafe_knowledge_base_is_refused_and_nothing_runs(kind: str, tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    text = _programs(marker)[kind]
    with pytest.raises(rules.UnsafeConstructError) as info:
        rules.knowledge_base_from_text("evil", text)
    d = info.value.diagnostics[0]
    assert d.line == 1 and d.column > 1 and "unsafe function" in d.message
    assert not marker.exists()


def test_allowed_when_asked_and_the_check_is_what_stops_it(tmp_path: Path) -> None:
    """The same text does write the file when run in raw CLIPS: the validator is what stands between."""
    marker = tmp_path / "written"
    text = _programs(marker)["open"]
    kb = rules.knowledge_base_from_text("allowed", text, allow_unsafe=True)
    env = clips.Environment()
    env.build(kb.text.split("\n")[0])
    env.reset()
    env.run()
    assert marker.exists()


def test_safe_function_through_funcall_is_allowed() -> None:
    rules.knowledge_base_from_text("ok", '(defrule r => (printout t (funcall str-cat "a" "b") crlf))')
