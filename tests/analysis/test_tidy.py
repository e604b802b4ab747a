"""The tidy schema: clean tables pass, every kind of problem is named."""

from __future__ import annotations

import numpy as np
import pytest

from scoring.metrics.analysis.tidy import (
    TidyError,
    caption_positions,
    model_order,
    paired_clips,
    validate_tidy,
    window_similarity,
)
from tests.analysis.synthetic import caption_row, synthetic_study, tidy_frames, window_row


@pytest.fixture(scope="module")
def study():
    return synthetic_study(n_clips=30, models=("A", "B", "C"), seed=3)


def test_a_synthetic_study_follows_the_schema(study) -> None:
    validate_tidy(study.captions, study.windows)


def test_hand_written_rows_follow_the_schema() -> None:
    captions, windows = tidy_frames(
        [caption_row("c1", "A", overview="reject", modes=["factual"])],
        [window_row("c1", "A", 0, verdict="reject", modes=["camera"]), window_row("c1", "A", 1)],
    )
    validate_tidy(captions, windows)


def test_missing_columns_are_named(study) -> None:
    captions = study.captions.drop(columns=["reviewer", "overview_final_camera"])
    windows = study.windows.drop(columns=["shot_changed"])
    with pytest.raises(TidyError) as error:
        validate_tidy(captions, windows)
    message = str(error.value)
    assert "captions: missing column(s): reviewer, overview_final_camera" in message
    assert "windows: missing column(s): shot_changed" in message


def test_bad_values_are_named_with_an_example(study) -> None:
    captions = study.captions.copy()
    captions.loc[2, "overview_final_verdict"] = "maybe"
    captions["overview_char_similarity"] = captions["overview_char_similarity"].astype(float)
    captions.loc[4, "overview_char_similarity"] = 1.5
    captions["retried"] = captions["retried"].astype(int)
    with pytest.raises(TidyError) as error:
        validate_tidy(captions, study.windows)
    problems = error.value.problems
    assert any("overview_final_verdict must be 'accept' or 'reject'" in p and "'maybe'" in p
               for p in problems)
    assert any("overview_char_similarity must be a number in [0, 1]" in p for p in problems)
    assert any(p.startswith("captions.retried must be a boolean column") for p in problems)


def test_a_score_column_must_be_numeric(study) -> None:
    captions = study.captions.assign(score_judge="high")
    with pytest.raises(TidyError, match="score_judge must be numeric"):
        validate_tidy(captions, study.windows)


def test_duplicate_captions_and_orphan_windows_are_refused() -> None:
    captions, windows = tidy_frames(
        [caption_row("c1", "A"), caption_row("c1", "A")],
        [window_row("c9", "A", 0)],
    )
    with pytest.raises(TidyError) as error:
        validate_tidy(captions, windows)
    message = str(error.value)
    assert "(clip, model) must be unique" in message
    assert "belong to no caption row" in message


def test_modes_on_an_accepted_unit_are_refused() -> None:
    captions, windows = tidy_frames(
        [caption_row("c1", "A", overview="accept", modes=["factual"])],
        [window_row("c1", "A", 0, verdict="accept", modes=["camera"])],
    )
    with pytest.raises(TidyError) as error:
        validate_tidy(captions, windows)
    message = str(error.value)
    assert "accepted in the final pass carry a failure mode" in message
    assert "window(s) accepted in the final pass carry a failure mode" in message


def test_edits_on_an_accepted_overview_or_window_are_refused() -> None:
    captions, windows = tidy_frames(
        [caption_row("c1", "A", words_changed=3)],
        [window_row("c1", "A", 0) | {"scene_changed": True}],
    )
    with pytest.raises(TidyError) as error:
        validate_tidy(captions, windows)
    assert "final 'accept' have words changed" in str(error.value)
    assert "final 'accept' have a changed field" in str(error.value)


def test_clip_properties_must_be_constant_within_a_clip() -> None:
    captions, windows = tidy_frames(
        [caption_row("c1", "A", camera_platform="handheld"),
         caption_row("c1", "B", camera_platform="tripod_static")], [])
    with pytest.raises(TidyError, match="camera_platform must be constant within a clip"):
        validate_tidy(captions, windows)


def test_paired_clips_are_those_with_every_model() -> None:
    captions, _ = tidy_frames(
        [caption_row("c1", "A"), caption_row("c1", "B"), caption_row("c2", "A"),
         caption_row("c3", "B"), caption_row("c3", "A")], [])
    assert sorted(paired_clips(captions)) == ["c1", "c3"]


def test_windows_map_to_their_caption_row() -> None:
    captions, windows = tidy_frames(
        [caption_row("c1", "A"), caption_row("c1", "B")],
        [window_row("c1", "B", 0), window_row("c1", "A", 0), window_row("c1", "B", 1)],
    )
    assert caption_positions(captions, windows).tolist() == [1, 0, 1]


def test_window_similarity_weighs_fields_by_their_characters() -> None:
    _, windows = tidy_frames([], [
        window_row("c", "A", 0, verdict="reject", scene=(100, 100, 0.3)),
        window_row("c", "A", 1, verdict="reject", scene=(100, 30, 0.3)),
        window_row("c", "A", 2),
    ])
    # (0.3 * 200 + 1 * 80) / 280 = 0.5; (0.3 * 130 + 80) / 210 = 0.5667; untouched = 1.
    assert np.allclose(window_similarity(windows), [0.5, 119 / 210, 1.0])


def test_models_are_ordered_by_paired_accuracy_then_name() -> None:
    captions, _ = tidy_frames(
        [caption_row("c1", "A", overview="reject"), caption_row("c1", "B"),
         caption_row("c1", "C"), caption_row("c2", "A"), caption_row("c2", "B"),
         caption_row("c2", "C", overview="reject"), caption_row("c3", "C")], [])
    assert model_order(captions) == ["B", "C", "A"]
