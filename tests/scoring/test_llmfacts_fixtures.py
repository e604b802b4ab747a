"""LLMFactsF1 parser and arithmetic against the six real FM-V2T pairs (fixtures/fm_v2t).

The facts and labels were produced by Llama 3.1 8B for the paper. They are rewritten into the
JSON our prompts ask for, fed through our parser and scorer, and must reproduce the counts and
rates in the example files and the LLMFactsF1 values published in the paper (Table 4).
"""

from __future__ import annotations

import ast
import csv
import json
from typing import Any

import pytest

from scoring.metrics.llmfacts import compute_scores, count_labels, parse_facts, parse_labels
from tests.conftest import REPO

FIXTURES = REPO / "fixtures" / "fm_v2t"

# Arzberger et al., MM '25, Table 4 (three decimals). The identical pair is not in the table;
# its value follows from the definition.
PUBLISHED_LLMFACTS_F1 = {
    "reference": 1.0,
    "negation": 0.585,
    "name_changes": 0.750,
    "intern": 0.400,
    "tarsier": 0.635,
    "video_llama": 0.273,
}


def _pair_name(external_key: str) -> str:
    name = external_key.split("::")[0]
    # The identical pair is keyed by the clip id.
    return "reference" if name.startswith("52_52_") else name


def _load_rows() -> dict[str, dict[str, str]]:
    with (FIXTURES / "LLMFactsF1_qualiative_raw.tsv").open(encoding="utf-8", newline="") as file:
        return {
            _pair_name(row["external_key"]): row for row in csv.DictReader(file, delimiter="\t")
        }


ROWS = _load_rows()
DIRECTIONS = [
    ("reference_facts.facts", "alignment_ref_to_pred.fact_relationships", "ref_to_pred"),
    ("prediction_facts.facts", "alignment_pred_to_ref.fact_relationships", "pred_to_ref"),
]


def _as_extraction_answer(facts: list[dict[str, Any]]) -> str:
    ordered = sorted(facts, key=lambda item: item["fact_index"])
    return json.dumps({"facts": [item["fact"] for item in ordered]})


def _as_checking_answer(relationships: list[dict[str, Any]]) -> str:
    labels = [
        {"fact": item["fact_index"], "reason": item["reason"], "label": item["relationship"]}
        for item in relationships
    ]
    return json.dumps({"labels": labels})


def _direction_counts(row: dict[str, str], facts_column: str, alignment_column: str) -> Any:
    facts = parse_facts(_as_extraction_answer(ast.literal_eval(row[facts_column])))
    labels = parse_labels(_as_checking_answer(ast.literal_eval(row[alignment_column])), len(facts))
    return count_labels(label for label, _reason in labels)


def test_fixture_holds_the_six_pairs_of_the_paper() -> None:
    assert sorted(ROWS) == sorted(PUBLISHED_LLMFACTS_F1)


@pytest.mark.parametrize("name", sorted(ROWS))
@pytest.mark.parametrize(("facts_column", "alignment_column", "direction"), DIRECTIONS)
def test_real_facts_and_labels_parse_to_the_published_counts(
    name: str, facts_column: str, alignment_column: str, direction: str
) -> None:
    row = ROWS[name]
    counts = _direction_counts(row, facts_column, alignment_column)
    assert counts.entailment == int(row[f"counts_{direction}.entailment"])
    assert counts.contradiction == int(row[f"counts_{direction}.contradiction"])
    assert counts.neutral == int(row[f"counts_{direction}.neutral"])
    assert counts.total == int(row[f"counts_{direction}.total_facts"])
    assert counts.ent == pytest.approx(float(row[f"metrics_{direction}.ent_over_total"]))
    assert counts.cont == pytest.approx(float(row[f"metrics_{direction}.cont_over_total"]))


@pytest.mark.parametrize("name", sorted(ROWS))
def test_real_labels_give_the_llmfacts_f1_published_in_the_paper(name: str) -> None:
    row = ROWS[name]
    a_to_b = _direction_counts(row, *DIRECTIONS[0][:2])
    b_to_a = _direction_counts(row, *DIRECTIONS[1][:2])
    scores = compute_scores(a_to_b, b_to_a)
    assert round(scores.llmfacts_f1, 3) == PUBLISHED_LLMFACTS_F1[name]


def test_negation_example_file_parses_to_its_counts() -> None:
    example = json.loads((FIXTURES / "negation_fact_alignment_example.json").read_text("utf-8"))
    for key, direction in [
        ("alignment_facts(ref)_to_pred", "counts_ref_to_pred"),
        ("alignment_facts(pred)_to_ref", "counts_pred_to_ref"),
    ]:
        relationships = example[key]["fact_relationships"]
        facts = parse_facts(_as_extraction_answer(relationships))
        labels = parse_labels(_as_checking_answer(relationships), len(facts))
        counts = count_labels(label for label, _reason in labels)
        expected = example["metrics"][direction]
        assert (counts.entailment, counts.contradiction, counts.neutral, counts.total) == (
            expected["entailment"],
            expected["contradiction"],
            expected["neutral"],
            expected["total_facts"],
        )
        assert [reason for _label, reason in labels] == [item["reason"] for item in relationships]
