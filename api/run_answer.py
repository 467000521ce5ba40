"""The predict answer's JSON (`RunOut`), reusing the text the store has just written for the run's
input and explanation (`workbench.store.database.recent_json_text`): a `demo_digits` answer is
~12 kB, of which the input (512 numbers) and the explanation are ~11 kB, and the commit wrote the
same objects with the same serializer moments before the answer (pydantic-core; a float that is
not finite as "NaN", "Infinity", "-Infinity" in both)."""

from __future__ import annotations

import uuid
from typing import Any

from pydantic import TypeAdapter, ValidationError

from workbench.store.database import recent_json_text

from .schemas.responses import JsonObject, RunOut

_EXPLANATION: TypeAdapter[Any] = TypeAdapter(JsonObject | None)


def run_answer_json(result: dict[str, Any]) -> str:
    """`RunOut.model_validate(result).model_dump_json()`, byte for byte, with the input's and the
    explanation's JSON taken from the store's write of the same objects when it is still at hand
    (else serialised here). Raises pydantic's ValidationError as `RunOut.model_validate` does."""
    inputs_text = recent_json_text(result.get("inputs"))
    explanation = result.get("explanation")
    explanation_text = recent_json_text(explanation)
    if inputs_text is None and explanation_text is None:
        return RunOut.model_validate(result).model_dump_json()
    token = uuid.uuid4().hex  # placeholders no other part of the answer can hold
    doc = dict(result)
    swaps = []
    if inputs_text is not None:
        doc["inputs"] = token
        swaps.append((f'"inputs":"{token}"', '"inputs":' + inputs_text))
    if explanation_text is not None:
        doc["explanation"] = {token: None}
        swaps.append((f'"explanation":{{"{token}":null}}', '"explanation":' + explanation_text))
    try:
        if explanation_text is not None:
            _EXPLANATION.validate_python(explanation)  # RunOut's check of the field it no longer sees
        text = RunOut.model_validate(doc).model_dump_json()
    except ValidationError:
        return RunOut.model_validate(result).model_dump_json()  # raises RunOut's own error
    for placeholder, fragment in swaps:
        if text.count(placeholder) != 1:  # never expected; the plain way is always right
            return RunOut.model_validate(result).model_dump_json()
        text = text.replace(placeholder, fragment, 1)
    return text
