"""Conventions the profile states: the leaderboard's clips, Table 14 without verdicts,
Figure 10's r, headers of tables that cannot be computed, CIDEr-D's idf corpus."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from scoring.metrics.analysis import failure_profile
from scoring.metrics.analysis.leaderboard import leaderboard
from scoring.metrics.analysis.modes import omission_vs_factual
from scoring.metrics.analysis.profile import TABLE_CAPTIONS, not_computable
from scoring.metrics.profile_files import write_profile_files
from tests.analysis.synthetic import caption_row, tidy_frames, window_row

FAST = {"resamples": 40, "adjusted_resamples": 10}


def judged_with_two_missing() -> pd.DataFrame:
    """20 clips, models A and B, one judge; B lacks two clips on which A scored low."""
    rng = np.random.default_rng(3)
    rows = []
    for clip in range(20):
        rows.append({"clip": f"c{clip}", "model": "A", "judge": "minilm",
                     "value": 0.5 if clip < 2 else 0.9 + 0.01 * rng.random()})
        if clip >= 2:
            rows.append({"clip": f"c{clip}", "model": "B", "judge": "minilm",
                         "value": 0.88 + 0.01 * rng.random()})
    return pd.DataFrame(rows)


def test_the_leaderboard_averages_each_model_over_its_own_clips_by_default():
    scores = judged_with_two_missing()
    own, _ = leaderboard(scores, resamples=50)
    common, _ = leaderboard(scores, resamples=50, clips="common")
    own, common = own.set_index("model"), common.set_index("model")
    a_own = scores[scores["model"] == "A"]["value"].mean()
    a_common = scores[(scores["model"] == "A") & ~scores["clip"].isin(["c0", "c1"])]["value"].mean()
    assert own.loc["A", "mean_minilm"] == pytest.approx(a_own)
    assert common.loc["A", "mean_minilm"] == pytest.approx(a_common)
    assert (own.loc["A", "clips"], own.loc["B", "clips"], common.loc["A", "clips"]) == (20, 18, 18)
    # The two missing clips decide the order: B leads over own clips, A over common ones.
    assert own.index[0] == "B" and common.index[0] == "A"
    assert 0 <= own.loc["A", "share_at_rank"] <= 1


def test_an_unknown_clip_rule_is_refused():
    with pytest.raises(ValueError, match="clips must be one of own, common"):
        leaderboard(judged_with_two_missing(), clips="some")


def test_the_leaderboard_caption_names_both_clip_rules():
    caption = TABLE_CAPTIONS["leaderboard"]
    assert "own scored clips" in caption and "common clips" in caption


def test_table_14_counts_generated_captions_without_any_verdict():
    captions, windows = tidy_frames([caption_row("c1", "A")], [])
    generated = captions.drop(columns=[c for c in captions.columns if c not in {
        "clip", "model", "input_tokens_per_second", "retried", "re_encoded", "invalid_kept"}])
    generated = pd.concat([generated, generated.assign(model="B")], ignore_index=True)
    tables = failure_profile(captions.iloc[:0], windows, generated=generated, **FAST)
    assert not not_computable(tables["generation"])
    assert tables["generation"]["captions"].tolist() == [1, 1]
    assert not_computable(tables["intervention_rate"]).startswith("not computable: needs at least")


def test_figure_10_says_why_r_is_blank():
    by_model = pd.DataFrame({"model": ["A", "B"], "captions": [4, 4], "factual_pct": [10.0, 20.0],
                             "omission_pct": [5.0, 30.0]})
    table = omission_vs_factual(by_model)
    assert table["pearson_r"].isna().all()
    assert table["pearson_note"].iloc[0] == (
        "not computable: needs at least 3 models with a factual and an omission rate (2 here)")
    three = pd.concat([by_model, by_model.iloc[:1].assign(model="C", factual_pct=40.0)])
    assert (omission_vs_factual(three)["pearson_note"] == "").all()


def test_every_table_csv_of_a_study_with_verdicts_has_a_header(tmp_path):
    captions, windows = tidy_frames(
        [caption_row("c1", "A", overview="reject", modes=["factual"], exposure=1),
         caption_row("c1", "B", exposure=1), caption_row("c2", "A", exposure=1)],
        [window_row("c1", "A", 0), window_row("c1", "B", 0)])
    tables = failure_profile(captions, windows, **FAST)
    assert not_computable(tables["leaderboard"])  # no judge scores: before, an empty file
    write_profile_files(tmp_path, title="t", captions=captions, windows=windows, tables=tables,
                        parameters={})
    for name in TABLE_CAPTIONS:
        header = (tmp_path / "tables" / f"{name}.csv").read_text().splitlines()[:1]
        assert header and header[0].strip(), name
    assert (tmp_path / "tables" / "leaderboard.csv").read_text().startswith("rank,model,points")


def test_table_1_states_the_cider_idf_corpus():
    assert "idf over the study's captions (one document per clip" in TABLE_CAPTIONS["metric_auc"]
