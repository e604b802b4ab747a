"""LLMFactsF1: strict answer parsing and the score arithmetic, edge cases included."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from scoring.metrics.llmfacts import (
    DirectionCounts,
    TransformersBackend,
    combine,
    compute_scores,
    count_labels,
    harmonic_mean,
    parse_facts,
    parse_json_answer,
    parse_labels,
)
from scoring.metrics.llmfacts.parsing import (
    MAX_ANSWER_CHARS,
    MAX_FACT_CHARS,
    MAX_FACTS,
    MAX_REASON_CHARS,
    AnswerSchemaError,
    AnswerSyntaxError,
)
from scoring.metrics.llmfacts.schemas import checking_schema, extraction_schema
from scoring.metrics.llmfacts.transformers_backend import end_of_first_json_object, end_of_first_repeat
from tests.conftest import REPO

GOOD_LABELS = (
    '{"labels": [{"fact": 2, "reason": "r2", "label": "neutral"}, '
    '{"fact": 1, "reason": "r1", "label": "contradiction"}]}'
)


# --- parsing -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "answer",
    [
        '{"facts": ["A cat sleeps."]}',
        '  \n{"facts": ["A cat sleeps."]}\n ',
        '```json\n{"facts": ["A cat sleeps."]}\n```',
        '```\n{"facts": ["A cat sleeps."]}\n```',
    ],
)
def test_plain_or_fenced_json_is_accepted(answer: str) -> None:
    assert parse_facts(answer) == ("A cat sleeps.",)


@pytest.mark.parametrize(
    "answer",
    [
        "",
        'Here are the facts: {"facts": ["A cat sleeps."]}',
        '{"facts": ["A cat sleeps."]} Hope this helps.',
        "{'facts': ['A cat sleeps.']}",
        '{"facts": ["A cat sleeps.",]}',
        '```json\n{"facts": ["A cat sleeps."]}',
        'Facts:\n```json\n{"facts": ["A cat sleeps."]}\n```',
        '{"facts": [NaN]}',
        '{"facts": [], "facts": ["A cat sleeps."]}',
    ],
)
def test_anything_looser_than_json_is_a_syntax_error(answer: str) -> None:
    with pytest.raises(AnswerSyntaxError):
        parse_json_answer(answer)


@pytest.mark.parametrize(
    "answer",
    [
        '["A cat sleeps."]',
        '{"fact": ["A cat sleeps."]}',
        '{"facts": "A cat sleeps."}',
        '{"facts": ["A cat sleeps.", 3]}',
        '{"facts": ["A cat sleeps.", "  "]}',
    ],
)
def test_extraction_answer_of_the_wrong_shape_is_a_schema_error(answer: str) -> None:
    with pytest.raises(AnswerSchemaError):
        parse_facts(answer)


def test_extraction_answer_may_have_no_facts() -> None:
    assert parse_facts('{"facts": []}') == ()


def test_labels_come_back_in_fact_order_with_their_reasons() -> None:
    assert parse_labels(GOOD_LABELS, 2) == (("contradiction", "r1"), ("neutral", "r2"))


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        ('{"labels": [{"fact": 1, "reason": "r", "label": "entailment"}]}', "no label for fact"),
        (
            '{"labels": [{"fact": 1, "reason": "r", "label": "entailment"}, '
            '{"fact": 1, "reason": "r", "label": "neutral"}]}',
            "more than once",
        ),
        (
            '{"labels": [{"fact": 1, "reason": "r", "label": "entailment"}, '
            '{"fact": 3, "reason": "r", "label": "neutral"}]}',
            "does not exist",
        ),
        (
            '{"labels": [{"fact": 1, "reason": "r", "label": "Entailment"}, '
            '{"fact": 2, "reason": "r", "label": "neutral"}]}',
            "not one of",
        ),
        (
            '{"labels": [{"fact": "1", "reason": "r", "label": "entailment"}, '
            '{"fact": 2, "reason": "r", "label": "neutral"}]}',
            "must be an integer",
        ),
        (
            '{"labels": [{"fact": true, "reason": "r", "label": "entailment"}, '
            '{"fact": 2, "reason": "r", "label": "neutral"}]}',
            "must be an integer",
        ),
        (
            '{"labels": [{"fact": 1, "label": "entailment"}, '
            '{"fact": 2, "reason": "r", "label": "neutral"}]}',
            '"reason" must be a string',
        ),
        ('{"labels": {"fact": 1}}', '"labels" to be a list'),
    ],
)
def test_each_fact_needs_exactly_one_valid_label(answer: str, message: str) -> None:
    with pytest.raises(AnswerSchemaError, match=message):
        parse_labels(answer, 2)


# --- scores --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("x", "y", "expected"),
    [(1.0, 1.0, 1.0), (0.5, 1.0, 2 / 3), (0.0, 0.0, 0.0), (0.0, 0.7, 0.0), (0.25, 0.75, 0.375)],
)
def test_harmonic_mean_is_zero_when_either_side_is_zero(
    x: float, y: float, expected: float
) -> None:
    assert harmonic_mean(x, y) == pytest.approx(expected)


def test_rates_of_a_text_without_facts_are_zero() -> None:
    empty = DirectionCounts(0, 0, 0)
    assert (empty.total, empty.ent, empty.cont) == (0, 0.0, 0.0)


def test_llmfacts_f1_is_zero_when_nothing_is_entailed_and_everything_contradicted() -> None:
    assert combine(0.0, 1.0) == 0.0


def test_two_texts_without_facts_score_zero() -> None:
    scores = compute_scores(DirectionCounts(0, 0, 0), DirectionCounts(0, 0, 0))
    assert scores.llmfacts_f1 == 0.0


def test_full_agreement_scores_one() -> None:
    scores = compute_scores(DirectionCounts(4, 0, 0), DirectionCounts(3, 0, 0))
    assert (scores.ent_f1, scores.cont_f1, scores.llmfacts_f1) == (1.0, 0.0, 1.0)


def test_scores_follow_the_definition_step_by_step() -> None:
    # A: 5 facts, 3 entailed and 1 contradicted by B; B: 4 facts, 2 entailed, 2 contradicted.
    scores = compute_scores(DirectionCounts(3, 1, 1), DirectionCounts(2, 2, 0))
    assert (scores.ent_ab, scores.cont_ab, scores.ent_ba, scores.cont_ba) == (0.6, 0.2, 0.5, 0.5)
    ent_f1 = 2 * 0.6 * 0.5 / 1.1
    cont_f1 = 2 * 0.2 * 0.5 / 0.7
    assert scores.ent_f1 == pytest.approx(ent_f1)
    assert scores.cont_f1 == pytest.approx(cont_f1)
    expected = 2 * ent_f1 * (1 - cont_f1) / (ent_f1 + 1 - cont_f1)
    assert scores.llmfacts_f1 == pytest.approx(expected)


def test_contradictions_in_one_direction_only_do_not_count() -> None:
    # CONT_F1 is a harmonic mean: contradictions seen from one side only give CONT_F1 = 0.
    scores = compute_scores(DirectionCounts(1, 0, 3), DirectionCounts(1, 3, 0))
    assert scores.cont_f1 == 0.0
    assert scores.llmfacts_f1 == pytest.approx(0.4)


def test_count_labels_counts_each_label() -> None:
    counts = count_labels(["entailment", "neutral", "entailment", "contradiction"])
    assert (counts.entailment, counts.contradiction, counts.neutral, counts.total) == (2, 1, 1, 4)


# --- stopping at the end of a JSON answer (transformers backend) ----------------------------


@pytest.mark.parametrize(
    ("text", "end"),
    [
        ('{"facts": ["a"]}', 16),
        ('  {"facts": ["a"]}\n\nMore text', 18),
        ('{"facts": ["a}", "b\\"}"]}}', 25),
        ('{"a": {"b": [1, {"c": 2}]}}', 27),
        ('{"facts": ["a"', None),
        ('```json\n{"facts": []}\n```', None),
        ("Here you go", None),
        ("", None),
    ],
)
def test_end_of_first_json_object_ignores_braces_in_strings(text: str, end: int | None) -> None:
    assert end_of_first_json_object(text) == end


@pytest.mark.parametrize(
    ("text", "cut"),
    [
        ('{"facts": ["a", "b", "a"', '{"facts": ["a", "b"]}'),
        ('{"facts": ["a", "a"', '{"facts": ["a"]}'),
        (' {"x": {"facts": ["q\\"", "q\\""', ' {"x": {"facts": ["q\\""]}}'),
        ('{"l": [{"r": "x"}, {"r": "x"}, "s", "s"', '{"l": [{"r": "x"}, {"r": "x"}, "s"]}'),
        # Not a repeat: a different list, an object's values, a string that is not finished.
        ('{"facts": ["a", "b"], "more": ["a"', None),
        ('{"labels": [{"reason": "same"}, {"reason": "same"}', None),
        ('{"facts": ["a", "a', None),
        ('{"facts": ["a", "b"]}', None),
        ("Here you go", None),
    ],
)
def test_a_list_that_starts_repeating_is_cut_before_the_repeat_and_closed(
    text: str, cut: str | None
) -> None:
    assert end_of_first_repeat(text) == cut
    if cut is not None:
        assert parse_json_answer(cut) is not None


def test_transformers_backend_names_its_model_file_and_limit_without_loading() -> None:
    backend = TransformersBackend("/models/folder/model.Q4.gguf", max_new_tokens=64)
    assert (backend.model_path, backend.gguf_file) == (Path("/models/folder"), "model.Q4.gguf")
    assert backend.model_id == "transformers:model.Q4.gguf:max_new_tokens=64:cut_repeats"
    assert TransformersBackend("/m.gguf", max_new_tokens=64, cut_repeats=False).model_id == (
        "transformers:m.gguf:max_new_tokens=64")
    assert backend.max_concurrency == 1


def test_importing_the_package_loads_neither_django_nor_torch() -> None:
    code = (
        "import sys, scoring.metrics.llmfacts; "
        "print(sorted({'django', 'torch', 'transformers'} & set(sys.modules)))"
    )
    completed = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert completed.stdout.strip() == "[]"


# --- answers bounded by the schema --------------------------------------------------------


def test_an_answer_cut_at_the_token_limit_inside_a_string_says_it_was_cut_short() -> None:
    # SmolLM2 through the local server: 7,250 characters of one fact, never closed.
    answer = '{"facts": ["A man ' + "and a man " * 724
    with pytest.raises(AnswerSyntaxError, match="cut short .*Unterminated string"):
        parse_facts(answer)
    with pytest.raises(AnswerSyntaxError, match="cut short"):
        parse_labels('{"labels": [{"fact": 1, "reason": "r", "label": "neutral"}, ', 2)


def test_an_answer_longer_than_any_the_schema_allows_is_refused_before_parsing() -> None:
    answer = json.dumps({"facts": ["x" * 100] * 10}) + " " * MAX_ANSWER_CHARS
    assert len(answer.strip()) < MAX_ANSWER_CHARS  # whitespace around it does not count
    parse_facts(answer)
    huge = json.dumps({"facts": ["A cat sleeps."] * 4_000})
    with pytest.raises(AnswerSyntaxError, match="more than any answer the schema allows"):
        parse_facts(huge)


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        (json.dumps({"facts": ["x" * (MAX_FACT_CHARS + 1)]}),
         f"fact 1 is {MAX_FACT_CHARS + 1} characters long; at most {MAX_FACT_CHARS}"),
        (json.dumps({"facts": ["A cat sleeps."] * (MAX_FACTS + 1)}),
         f"lists {MAX_FACTS + 1} facts; at most {MAX_FACTS}"),
    ],
)
def test_an_oversized_extraction_is_a_schema_error_naming_the_bound(answer: str,
                                                                    message: str) -> None:
    with pytest.raises(AnswerSchemaError, match=re.escape(message)):
        parse_facts(answer)


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        (json.dumps({"labels": [{"fact": 1, "reason": "r" * (MAX_REASON_CHARS + 1),
                                 "label": "neutral"}]}),
         f"fact 1: the reason is {MAX_REASON_CHARS + 1} characters long; at most "
         f"{MAX_REASON_CHARS}"),
        (json.dumps({"labels": [{"fact": n, "reason": "r", "label": "neutral"}
                                for n in (1, 1, 1)]}), "the answer has 3 labels for 1 facts"),
        (json.dumps({"labels": [{"fact": 1, "reason": "r", "label": "entailment" * 50}]}),
         "label 'entailmententailment"),
    ],
)
def test_an_oversized_checking_answer_is_a_schema_error_naming_the_bound(answer: str,
                                                                         message: str) -> None:
    with pytest.raises(AnswerSchemaError, match=re.escape(message)) as refused:
        parse_labels(answer, 1)
    assert len(str(refused.value)) < 200  # an oversized value is not repeated whole


def test_the_schemas_carry_the_parsers_bounds() -> None:
    extraction = extraction_schema()["properties"]["facts"]
    assert extraction["maxItems"] == MAX_FACTS
    assert extraction["items"]["maxLength"] == MAX_FACT_CHARS
    checking = checking_schema(3)["properties"]["labels"]
    assert checking["minItems"] == checking["maxItems"] == 3 and checking["items"] is False
    entry = checking["prefixItems"][0]["properties"]
    assert entry["reason"]["maxLength"] == MAX_REASON_CHARS
    assert entry["label"] == {"enum": ["entailment", "contradiction", "neutral"]}
    # The longest answer the extraction schema allows still parses.
    longest = json.dumps({"facts": ['"' * MAX_FACT_CHARS] * MAX_FACTS})
    assert len(parse_facts(longest)) == MAX_FACTS
