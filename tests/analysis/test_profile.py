"""The single entry point, its determinism, edge-case studies, and the figures."""

from __future__ import annotations

import pandas as pd
import pytest
from matplotlib.figure import Figure

from scoring.metrics.analysis import TABLE_CAPTIONS, TidyError, failure_profile
from scoring.metrics.analysis.figures import FIGURES, build_figures, mode_profiles, save_figure
from tests.analysis.synthetic import caption_row, synthetic_study, tidy_frames, window_row

FAST = {"resamples": 200, "adjusted_resamples": 50}


@pytest.fixture(scope="module")
def study():
    return synthetic_study(n_clips=60, models=("A", "B", "C"), seed=21)


@pytest.fixture(scope="module")
def profile(study) -> dict[str, pd.DataFrame]:
    return failure_profile(study.captions, study.windows, seed=5, **FAST)


def test_every_table_is_returned_in_caption_order(profile) -> None:
    assert list(profile) == list(TABLE_CAPTIONS)
    # Without judge scores the leaderboard is marked; every other table has rows.
    from scoring.metrics.analysis.profile import not_computable

    marked = {name for name, table in profile.items() if not_computable(table)}
    assert marked == {"leaderboard", "judge_agreement"}
    assert all(isinstance(table, pd.DataFrame) and not table.empty
               for name, table in profile.items() if name not in marked)
    assert all(caption.strip() for caption in TABLE_CAPTIONS.values())


def test_per_model_tables_have_a_model_column_in_one_order(profile) -> None:
    order = profile["correctness"]["model"].tolist()
    assert sorted(order) == ["A", "B", "C"]
    for name in ("intervention_rate", "mode_incidence_by_model", "untouched", "generation",
                 "accepted_with_rejected_window", "model_profile", "correctness_all"):
        assert profile[name]["model"].tolist() == order, name


def test_the_same_seed_gives_identical_numbers(study, profile) -> None:
    again = failure_profile(study.captions, study.windows, seed=5, **FAST)
    for name, table in profile.items():
        pd.testing.assert_frame_equal(table, again[name], check_exact=True, obj=name)


def test_another_seed_moves_only_the_bootstrap_intervals(study, profile) -> None:
    other = failure_profile(study.captions, study.windows, seed=6, **FAST)
    pd.testing.assert_frame_equal(profile["intervention_rate"], other["intervention_rate"])
    assert not profile["pairwise_gaps"]["ci_low"].equals(other["pairwise_gaps"]["ci_low"])
    assert profile["pairwise_gaps"]["gap_pts"].equals(other["pairwise_gaps"]["gap_pts"])


def test_a_table_does_not_depend_on_which_others_ran(study, profile) -> None:
    from scoring.metrics.analysis.rates import correctness
    from scoring.metrics.analysis.tidy import paired_subset

    paired, paired_windows = paired_subset(study.captions, study.windows)
    alone = correctness(paired, paired_windows, resamples=200, seed=5,
                        models=profile["correctness"]["model"].tolist())
    pd.testing.assert_frame_equal(alone, profile["correctness"])


def test_progress_is_told_each_table_before_it_is_computed(study) -> None:
    seen: list[str] = []
    failure_profile(study.captions, study.windows, progress=seen.append, **FAST)
    assert seen == list(TABLE_CAPTIONS)


def test_paired_only_restricts_every_table(study, profile) -> None:
    paired = failure_profile(study.captions, study.windows, paired_only=True, seed=5, **FAST)
    pd.testing.assert_frame_equal(paired["intervention_rate"],
                                  profile["intervention_rate_paired"])
    assert (paired["intervention_rate"]["captions"] == profile["pairwise_gaps"]["clips"].iloc[0]
            ).all()


def test_invalid_input_is_refused_before_any_work(study) -> None:
    with pytest.raises(TidyError, match="missing column"):
        failure_profile(study.captions.drop(columns=["annotator"]), study.windows, **FAST)


def test_a_tiny_study_with_edge_cases_still_gives_every_table() -> None:
    # Model B never rejects; clip c3 has one model only; no bucket reaches 60 verdicts.
    captions, windows = tidy_frames(
        [caption_row("c1", "A", overview="reject", modes=["camera"], words_changed=20),
         caption_row("c1", "B"),
         caption_row("c2", "A"), caption_row("c2", "B"),
         caption_row("c3", "A", overview="reject", modes=["factual"], annotator="ann2",
                     camera_platform="handheld", score_bleu4=0.2)],
        [window_row("c1", "A", 0, verdict="reject", modes=["camera"], scene=(100, 150, 0.4)),
         window_row("c1", "B", 0), window_row("c2", "A", 0), window_row("c2", "B", 0),
         window_row("c3", "A", 0)],
    )
    captions["score_bleu4"] = captions["score_bleu4"].astype(float)
    tables = failure_profile(captions, windows, **FAST)
    assert list(tables) == list(TABLE_CAPTIONS)
    rates = tables["intervention_rate"].set_index("model")
    assert rates.loc["B", "intervention_ge1_pct"] == 0.0
    assert rates.loc["A", "intervention_ge16_pct"] == pytest.approx(100 / 3)
    assert tables["pairwise_gaps"]["clips"].iloc[0] == 2
    assert tables["models_failing_per_clip"]["clips_observed"].sum() == 2
    assert tables["clip_property_buckets"].empty
    assert (tables["clip_property_tests"]["buckets"] == 0).all()
    auc = tables["metric_auc"].set_index("score").loc["score_bleu4"]
    assert (auc["accepted"], auc["rejected"]) == (0, 1)
    assert pd.isna(auc["auc"])
    assert build_figures(tables)  # figures survive empty and undefined values too


def test_every_figure_is_drawn_and_saved_as_png_and_svg(profile, tmp_path) -> None:
    figures = build_figures(profile)
    assert set(figures) == set(FIGURES)
    assert all(isinstance(figure, Figure) for figure in figures.values())
    paths = save_figure(figures["figure1_intervention_by_threshold"], tmp_path / "out" / "fig1")
    assert [p.name for p in paths] == ["fig1.png", "fig1.svg"]
    assert paths[0].read_bytes().startswith(b"\x89PNG")
    assert b"<svg" in paths[1].read_bytes()[:500]


def test_saved_figures_are_byte_identical_across_runs(profile, tmp_path) -> None:
    draw = FIGURES["figure3_accepted_with_rejected_window"][1]
    first = save_figure(draw(profile["accepted_with_rejected_window"]), tmp_path / "a")
    second = save_figure(draw(profile["accepted_with_rejected_window"]), tmp_path / "b")
    assert [p.read_bytes() for p in first] == [p.read_bytes() for p in second]


def test_mode_profiles_can_compare_two_chosen_models(profile) -> None:
    figure = mode_profiles(profile["mode_incidence_by_model"], models=["C", "A"])
    labels = [text.get_text() for text in figure.axes[0].get_legend().get_texts()]
    assert labels == ["C", "A"]


def test_the_library_imports_without_django() -> None:
    import subprocess
    import sys

    code = ("import sys, scoring.metrics.analysis, scoring.metrics.analysis.figures; "
            "sys.exit(any(m.split('.')[0] == 'django' for m in sys.modules))")
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0
