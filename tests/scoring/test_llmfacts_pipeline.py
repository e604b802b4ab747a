"""LLMFactsF1 pipeline with an in-process scripted model: caching, edge cases, results."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from scoring.metrics.llmfacts import (
    PROMPT_VERSION,
    AnswerError,
    LLMFactsResult,
    Message,
    ResultCache,
    cache_key,
    check_facts,
    checking_messages,
    extract_facts,
    extraction_messages,
    llmfacts_f1,
    llmfacts_f1_many,
)
from scoring.metrics.llmfacts.pipeline import EMPTY_TEXT_REASON, forget_texts
from tests.conftest import REPO

FIXTURES = REPO / "fixtures" / "fm_v2t"

EXTRACTION_SYSTEM = extraction_messages("x")[0]["content"]
CHECKING_SYSTEM = checking_messages("x", ["y"])[0]["content"]
_QUOTED_TEXT = re.compile(r"<<<\n(.*?)\n>>>", re.DOTALL)


class ScriptedBackend:
    """Answers from Python functions of (stage, quoted text, messages) and records the calls."""

    max_concurrency = 4

    def __init__(self, answer: Callable[[str, str, Sequence[Message]], str]) -> None:
        self.model_id = "scripted"
        self._answer = answer
        self._lock = threading.Lock()
        self.calls: list[tuple[str, str]] = []

    def chat(self, messages: Sequence[Message]) -> str:
        system = messages[0]["content"]
        stage = {EXTRACTION_SYSTEM: "extraction", CHECKING_SYSTEM: "checking"}.get(system, "repair")
        quoted = _QUOTED_TEXT.search(messages[-1]["content"])
        text = quoted.group(1) if quoted else ""
        with self._lock:
            self.calls.append((stage, text))
        return self._answer(stage, text, messages)


def facts_answer(*facts: str) -> str:
    return json.dumps({"facts": list(facts)})


def labels_answer(*labels: str) -> str:
    return json.dumps(
        {
            "labels": [
                {"fact": number, "reason": f"reason {number}", "label": label}
                for number, label in enumerate(labels, start=1)
            ]
        }
    )


def simple_model(stage: str, text: str, messages: Sequence[Message]) -> str:
    """Every sentence is a fact; a fact is entailed when its text contains the fact verbatim."""
    if stage == "extraction":
        return facts_answer(*[f"{part.strip()}." for part in text.split(".") if part.strip()])
    facts = re.findall(r"^\d+\. (.*)$", messages[-1]["content"], re.MULTILINE)
    return labels_answer(*["entailment" if fact in text else "neutral" for fact in facts])


def test_negation_example_runs_through_the_pipeline_to_the_published_score() -> None:
    example = json.loads((FIXTURES / "negation_fact_alignment_example.json").read_text("utf-8"))
    reference, prediction = example["reference_text"], example["prediction_text"]
    ref_side = example["alignment_facts(ref)_to_pred"]["fact_relationships"]
    pred_side = example["alignment_facts(pred)_to_ref"]["fact_relationships"]

    def paper_model(stage: str, text: str, messages: Sequence[Message]) -> str:
        # The paper's own answers: facts of a text; labels of the other text's facts against it.
        side = ref_side if (stage == "extraction") == (text == reference) else pred_side
        if stage == "extraction":
            return facts_answer(*[item["fact"] for item in side])
        labels = [
            {"fact": item["fact_index"], "reason": item["reason"], "label": item["relationship"]}
            for item in side
        ]
        return json.dumps({"labels": labels})

    result = llmfacts_f1(reference, prediction, ScriptedBackend(paper_model), cache=ResultCache())

    assert result.a_to_b.facts == tuple(item["fact"] for item in ref_side)
    assert [c.label for c in result.b_to_a.checks] == ["entailment", "entailment", "contradiction"]
    assert result.b_to_a.checks[2].reason == pred_side[2]["reason"]
    assert round(result.llmfacts_f1, 3) == 0.585


def test_a_pair_takes_two_extractions_and_two_checks() -> None:
    backend = ScriptedBackend(simple_model)
    result = llmfacts_f1(
        "A cat sleeps. A dog barks.", "A cat sleeps.", backend, cache=ResultCache()
    )

    assert sorted(stage for stage, _text in backend.calls) == [
        "checking",
        "checking",
        "extraction",
        "extraction",
    ]
    assert result.a_to_b.counts.entailment == 1 and result.a_to_b.counts.neutral == 1
    assert result.b_to_a.counts.entailment == 1
    assert result.scores.ent_f1 == pytest.approx(2 / 3)
    assert result.model_id == "scripted" and result.prompt_version == PROMPT_VERSION


def test_cached_answers_are_not_asked_again() -> None:
    backend = ScriptedBackend(simple_model)
    cache = ResultCache()
    first = llmfacts_f1("A cat sleeps.", "A dog barks.", backend, cache=cache)
    calls = len(backend.calls)
    second = llmfacts_f1("A cat sleeps.", "A dog barks.", backend, cache=cache)

    assert len(backend.calls) == calls
    assert second == first


def test_a_reference_paired_with_many_predictions_is_extracted_once() -> None:
    backend = ScriptedBackend(simple_model)
    pairs = [("A cat sleeps.", prediction) for prediction in ["A dog.", "A cow.", "A hen."]]
    results = llmfacts_f1_many(pairs, backend, cache=ResultCache())

    assert all(isinstance(result, LLMFactsResult) for result in results)
    assert backend.calls.count(("extraction", "A cat sleeps.")) == 1


def test_disk_cache_survives_a_new_process_cache(tmp_path: Path) -> None:
    backend = ScriptedBackend(simple_model)
    first = llmfacts_f1("A cat sleeps.", "A dog barks.", backend, cache=ResultCache(tmp_path))
    calls = len(backend.calls)
    second = llmfacts_f1("A cat sleeps.", "A dog barks.", backend, cache=ResultCache(tmp_path))

    assert len(backend.calls) == calls
    assert second == first
    assert len(list(tmp_path.glob("*.json"))) == 4


def test_cache_key_names_model_prompt_version_step_and_text_hashes() -> None:
    key = cache_key("m", PROMPT_VERSION, "extraction", ["abc"])
    assert key == (
        "m",
        PROMPT_VERSION,
        "extraction",
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
    )
    assert cache_key("other", PROMPT_VERSION, "extraction", ["abc"]) != key


def test_blank_prediction_scores_zero_without_asking_about_it() -> None:
    backend = ScriptedBackend(simple_model)
    result = llmfacts_f1("A cat sleeps.", "  ", backend, cache=ResultCache())

    assert backend.calls == [("extraction", "A cat sleeps.")]
    assert result.a_to_b.checks[0].label == "neutral"
    assert result.a_to_b.checks[0].reason == EMPTY_TEXT_REASON
    assert result.b_to_a.checks == ()
    assert result.llmfacts_f1 == 0.0


def test_text_without_facts_is_not_checked() -> None:
    backend = ScriptedBackend(lambda stage, text, messages: facts_answer())
    result = llmfacts_f1("Nothing.", "Nothing at all.", backend, cache=ResultCache())

    assert [stage for stage, _text in backend.calls] == ["extraction", "extraction"]
    assert result.scores.llmfacts_f1 == 0.0


def test_well_formed_answer_of_the_wrong_shape_fails_without_a_repair_call() -> None:
    def model(stage: str, text: str, messages: Sequence[Message]) -> str:
        return facts_answer("A cat sleeps.") if stage == "extraction" else labels_answer()

    backend = ScriptedBackend(model)
    with pytest.raises(AnswerError, match="checking: the answer is JSON but not") as caught:
        check_facts("A cat sleeps.", ["A cat sleeps."], backend, cache=ResultCache())

    assert caught.value.stage == "checking"
    assert caught.value.repaired_answer is None
    assert "repair" not in [stage for stage, _text in backend.calls]


def test_many_returns_failures_in_place() -> None:
    def model(stage: str, text: str, messages: Sequence[Message]) -> str:
        return "not json" if "broken" in text else simple_model(stage, text, messages)

    pairs = [("A cat.", "A cat."), ("A broken one.", "A cat."), ("A dog.", "A dog.")]
    results = llmfacts_f1_many(pairs, ScriptedBackend(model), cache=ResultCache())

    assert [type(result).__name__ for result in results] == [
        "LLMFactsResult",
        "AnswerError",
        "LLMFactsResult",
    ]


def test_result_round_trips_through_a_dict_and_json() -> None:
    backend = ScriptedBackend(simple_model)
    result = llmfacts_f1(
        "A cat sleeps. A dog barks.", "A cat sleeps.", backend, cache=ResultCache()
    )
    stored: dict[str, Any] = json.loads(json.dumps(result.to_dict()))

    assert stored["a_to_b"]["checks"][0] == {
        "fact": "A cat sleeps.",
        "label": "entailment",
        "reason": "reason 1",
    }
    assert stored["a_to_b"]["counts"] == {
        "entailment": 1,
        "contradiction": 0,
        "neutral": 1,
        "total": 2,
    }
    assert LLMFactsResult.from_dict(stored) == result


def test_extract_facts_uses_the_process_cache_by_default() -> None:
    backend = ScriptedBackend(simple_model)
    backend.model_id = "scripted-process-cache-test"
    assert extract_facts("A hen clucks.", backend) == ("A hen clucks.",)
    assert extract_facts("A hen clucks.", backend) == ("A hen clucks.",)
    assert len(backend.calls) == 1


# --- facts copied from the prompt's worked example ------------------------------------------


def copying_model(stage: str, text: str, messages: Sequence[Message]) -> str:
    """A small model that adds the worked example's facts to every extraction (as SmolLM2 did
    in 7 of 24 extractions: "two men in red coats" in captions without any)."""
    if stage == "extraction":
        own = [f"{part.strip()}." for part in text.split(".") if part.strip()]
        return facts_answer(*own, "Two men wear red coats.", "two men open a door")
    return simple_model(stage, text, messages)


def test_facts_copied_from_the_prompts_example_are_dropped_and_counted() -> None:
    backend = ScriptedBackend(copying_model)
    result = llmfacts_f1("A cat sleeps. A dog barks.", "A cat sleeps.", backend,
                         cache=ResultCache())
    assert result.a_to_b.facts == ("A cat sleeps.", "A dog barks.")
    assert result.b_to_a.facts == ("A cat sleeps.",)
    assert result.example_facts_dropped == 4  # two per text
    # Before: the copies were checked as facts of the text and counted as neutral.
    assert result.scores.ent_ab == 0.5 and result.scores.ent_ba == 1.0
    stored = json.loads(json.dumps(result.to_dict()))
    assert stored["diagnostics"] == {"example_facts_dropped": 4}
    assert LLMFactsResult.from_dict(stored) == result


def test_an_example_fact_that_the_text_states_is_kept() -> None:
    backend = ScriptedBackend(copying_model)
    result = llmfacts_f1("Two men open a door.", "A cat sleeps.", backend, cache=ResultCache())
    # "Two men open a door." is the text's own fact; "two men open a door" restates it (kept,
    # as every word is in the text); only the red coats are the example's.
    assert result.a_to_b.facts == ("Two men open a door.", "two men open a door")
    assert result.example_facts_dropped == 1 + 2


def test_forgetting_a_text_drops_its_facts_and_every_check_made_with_them(tmp_path: Path) -> None:
    backend = ScriptedBackend(simple_model)
    cache = ResultCache(tmp_path)
    llmfacts_f1("A secret kettle whistles. It is red.", "A dog barks.", backend, cache=cache)
    llmfacts_f1("A cat sleeps.", "A dog barks.", backend, cache=cache)
    assert len(list(tmp_path.glob("*.json"))) == 7  # the dog's facts are extracted once

    assert forget_texts(["A secret kettle whistles. It is red."], cache) == 3
    # Left: the dog's and the cat's facts, and the two checks between them.
    left = [path.read_text() for path in tmp_path.glob("*.json")]
    assert len(left) == 4 and not [text for text in left if "kettle" in text or "red" in text]
    backend.calls.clear()
    fresh = ResultCache(tmp_path)  # another process: asks again about the forgotten text only
    llmfacts_f1("A secret kettle whistles. It is red.", "A dog barks.", backend, cache=fresh)
    assert sorted(stage for stage, _ in backend.calls) == ["checking", "checking", "extraction"]
    llmfacts_f1("A cat sleeps.", "A dog barks.", backend, cache=fresh)
    assert len(backend.calls) == 3
    assert forget_texts(["", "   "], cache) == 0
