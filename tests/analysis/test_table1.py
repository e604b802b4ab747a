"""Table 1 on hand-counted studies: reference sets, the AUC, and leave-both-out Matched pairs."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from scoring.metrics.analysis.metrics import COLUMNS, metric_auc, reference_set
from tests.analysis.synthetic import caption_row, tidy_frames


@pytest.fixture
def study() -> pd.DataFrame:
    """Two clips. k1: A, B accepted; C rejected. k2: A accepted; B rejected.

    score_approved_x (higher accepts): A 0.9, B 0.4, C 0.5 on k1; A 0.2, B 0.6 on k2.
    Pooled pairs (3 accepted x 2 rejected): 0.9 beats both, 0.4 beats neither, 0.2 neither ->
    AUC 2 / 6. score_imported_y ties everywhere (0.5): AUC 0.5, matched 0.5.
    """
    captions, _ = tidy_frames([
        caption_row("k1", "A", score_approved_x=0.9, score_imported_y=0.5, score_length=80.0),
        caption_row("k1", "B", score_approved_x=0.4, score_imported_y=0.5, score_length=90.0),
        caption_row("k1", "C", overview="reject", score_approved_x=0.5, score_imported_y=0.5,
                    score_length=85.0),
        caption_row("k2", "A", score_approved_x=0.2, score_imported_y=0.5, score_length=70.0),
        caption_row("k2", "B", overview="reject", score_approved_x=0.6, score_imported_y=0.5,
                    score_length=60.0),
    ], [])
    return captions


def matched_rows(*rows: tuple[str, str, str, float, float]) -> pd.DataFrame:
    return pd.DataFrame([{"clip": clip, "score": "score_approved_x", "accepted_model": good,
                          "rejected_model": bad, "accepted_value": a, "rejected_value": r}
                         for clip, good, bad, a, r in rows])


def test_each_score_column_names_its_reference_set() -> None:
    assert [reference_set(name) for name in ("score_approved_bleu4", "score_gold_cider_minilm",
                                             "score_imported_meteor", "score_length",
                                             "score_llmfacts_f1")] == [
        "approved", "gold", "imported", "control", "unstated"]


def test_rows_come_in_reference_set_order_with_every_column(study) -> None:
    table = metric_auc(study, resamples=20)
    assert list(table.columns) == COLUMNS
    assert table["score"].tolist() == ["score_approved_x", "score_imported_y", "score_length"]


def test_pooled_auc_counts_accepted_rejected_pairs_across_clips(study) -> None:
    row = metric_auc(study, resamples=20).set_index("score").loc["score_approved_x"]
    assert (row["accepted"], row["rejected"]) == (3, 2)
    assert row["auc"] == pytest.approx(2 / 6)
    assert row["mean_accepted"] == pytest.approx(1.5 / 3)
    assert row["mean_rejected"] == pytest.approx(0.55)


def test_approved_matched_needs_leave_both_out_scores(study) -> None:
    row = metric_auc(study, resamples=20).set_index("score").loc["score_approved_x"]
    # Each caption's own approved set differs, so its pooled same-clip pairs are not matched.
    assert row["matched_pairs"] == 0 and math.isnan(row["auc_matched"])


def test_approved_matched_uses_the_leave_both_out_pairs(study) -> None:
    # k1: (A, C) accepted wins, (B, C) tie -> 1.5 of 2; k2: (A, B) loses -> 0 of 1.
    pairs = matched_rows(("k1", "A", "C", 0.7, 0.3), ("k1", "B", "C", 0.5, 0.5),
                         ("k2", "A", "B", 0.1, 0.8))
    row = metric_auc(study, matched=pairs, resamples=400).set_index("score").loc[
        "score_approved_x"]
    assert (row["matched_pairs"], row["matched_clips"]) == (3, 2)
    assert row["auc_matched"] == pytest.approx(1.5 / 3)
    # Resampling clips can only give k1 alone (0.75), k2 alone (0) or mixtures between.
    assert 0.0 <= row["matched_ci_low"] <= row["auc_matched"] <= row["matched_ci_high"] <= 0.75


def test_imported_and_control_rows_match_within_the_clip(study) -> None:
    table = metric_auc(study, resamples=20).set_index("score")
    imported = table.loc["score_imported_y"]
    assert (imported["auc"], imported["auc_matched"], imported["matched_pairs"]) == (0.5, 0.5, 3)
    length = table.loc["score_length"]
    # Shorter accepts: 80 and 90 vs 85 on k1 (one win), 70 vs 60 on k2 (loss).
    assert length["direction"] == "lower accepts"
    assert length["auc_matched"] == pytest.approx(1 / 3)
