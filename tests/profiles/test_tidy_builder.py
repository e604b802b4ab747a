"""The tidy tables built from a scripted study follow the schema and hold hand-computed values."""

import pandas as pd
import pytest
from django.utils import timezone

from annotation.models import Annotation, Caption
from annotation.services.studies import membership_grant
from annotation.services.workflow import annotations_assign
from scoring.metrics.analysis import validate_tidy
from scoring.profiles import ProfileError, score_column, tidy_tables, usual_window_count
from tests.annotation.studybuild import complete
from tests.profiles.conftest import approve

pytestmark = pytest.mark.django_db

ORIGINAL = "A test card with a counter that counts up."


def row(frame, clip, model):
    found = frame[(frame["clip"] == clip) & (frame["model"] == model)]
    assert len(found) == 1
    return found.iloc[0]


def window(frame, clip, model, index):
    found = frame[(frame["clip"] == clip) & (frame["model"] == model) & (frame["index"] == index)]
    assert len(found) == 1
    return found.iloc[0]


def test_tables_follow_the_schema_with_one_row_per_final_verdict(scripted):
    captions, windows = tidy_tables(scripted)
    validate_tidy(captions, windows)
    assert sorted(zip(captions["clip"], captions["model"], strict=True)) == [
        ("c1", "Alpha"),
        ("c1", "Bravo"),
        ("c2", "Alpha"),
        ("c2", "Bravo"),
        ("c3", "Alpha"),
    ]
    assert len(windows) == 5 * 3


def test_a_rejected_overview_carries_its_hand_computed_edit_size(scripted):
    captions, _ = tidy_tables(scripted)
    c1 = row(captions, "c1", "Alpha")
    assert (c1["overview_annotator_verdict"], c1["overview_final_verdict"]) == ("reject", "reject")
    assert c1["overview_final_factual"] and not c1["overview_final_omission"]
    # "counter that counts up." -> "counter.": four words replaced by one counts four.
    assert c1["overview_words_changed"] == 4
    assert c1["overview_original_chars"] == len(ORIGINAL) == 42
    assert c1["overview_corrected_chars"] == 27
    assert c1["overview_char_similarity"] == pytest.approx(54 / 69)
    assert (c1["annotator"], c1["reviewer"]) == ("annotator", "reviewer")
    assert (c1["camera_platform"], c1["scene_complexity"], c1["shot_scale"]) == (
        "handheld",
        "high",
        "",
    )
    assert c1["input_tokens_per_second"] == 120.5
    assert c1["score_length"] == 9


def test_the_annotators_pass_and_the_qc_pass_are_kept_apart(scripted):
    captions, windows = tidy_tables(scripted)
    bravo = row(captions, "c2", "Bravo")
    assert (bravo["overview_annotator_verdict"], bravo["overview_final_verdict"]) == (
        "reject",
        "accept",
    )
    assert bravo["overview_annotator_factual"] and not bravo["overview_final_factual"]
    assert (bravo["overview_words_changed"], bravo["overview_char_similarity"]) == (0, 1.0)
    amended = window(windows, "c1", "Bravo", 2)
    assert (amended["annotator_verdict"], amended["final_verdict"]) == ("accept", "reject")
    assert amended["final_camera"] and not amended["annotator_camera"]
    assert amended["shot_words_changed"] == 3 and amended["shot_changed"]
    assert not amended["scene_changed"] and amended["scene_char_similarity"] == 1.0


def test_a_rejected_window_measures_its_final_text_against_the_original(scripted):
    _, windows = tidy_tables(scripted)
    rejected = window(windows, "c1", "Alpha", 1)
    assert rejected["final_verdict"] == "reject" and rejected["final_temporal"]
    assert rejected["scene_words_changed"] == 2
    assert (rejected["scene_original_words"], rejected["scene_corrected_words"]) == (4, 3)
    assert (rejected["scene_original_chars"], rejected["scene_corrected_chars"]) == (26, 17)
    assert rejected["scene_char_similarity"] == pytest.approx(32 / 43)
    accepted = window(windows, "c1", "Alpha", 0)
    assert accepted["final_verdict"] == "accept" and not accepted["scene_changed"]
    assert accepted["scene_words_changed"] == 0


def test_segmentation_and_clip_flags_come_through(scripted):
    captions, _ = tidy_tables(scripted)
    c2 = row(captions, "c2", "Alpha")
    assert (c2["segmentation_annotator_verdict"], c2["segmentation_final_verdict"]) == (
        "reject",
        "reject",
    )
    assert c2["manipulated"] and not row(captions, "c1", "Alpha")["manipulated"]


def test_a_study_without_scores_has_only_the_length_score(scripted):
    captions, _ = tidy_tables(scripted)
    assert [c for c in captions.columns if c.startswith("score_")] == ["score_length"]


def test_stored_scores_become_columns_the_newest_winning_and_edit_size_left_out(scripted):
    from scoring.models import ScoreResult

    caption = Caption.objects.get(clip__name="c1", model__name="Alpha")
    annotation = caption.annotations.get()
    now = timezone.now()

    def store(subject, metric, value, judge="", version="1", annotation=None, seconds=0):
        ScoreResult.objects.create(
            study=scripted,
            caption=caption,
            annotation=annotation,
            subject=subject,
            item_key=f"{subject}:{caption.pk}:{metric}:{version}",
            metric=metric,
            judge_or_backend=judge,
            metric_version=version,
            value=value,
            computed_at=now + timezone.timedelta(seconds=seconds),
        )

    store("caption_vs_reference", "bleu4", 0.1, version="1")
    store("caption_vs_reference", "bleu4", 0.3, version="2", seconds=5)
    store("caption_vs_gold", "cospar", 0.9, judge="minilm")
    store("caption_vs_approved", "cider", 1.5)
    store("caption_vs_approved", "words_changed", 4.0)
    # The caption against its own final text: the verdict's size, never a Table 1 score.
    store("overview", "cospar", 0.7, judge="minilm", annotation=annotation)
    captions, windows = tidy_tables(scripted)
    validate_tidy(captions, windows)
    c1 = row(captions, "c1", "Alpha")
    assert score_column("caption_vs_gold", "cospar", "minilm") == "score_gold_cospar_minilm"
    assert c1["score_imported_bleu4"] == 0.3
    assert c1["score_gold_cospar_minilm"] == 0.9
    assert c1["score_approved_cider"] == 1.5
    assert "score_approved_words_changed" not in captions.columns
    assert sorted(c for c in captions.columns if c.startswith("score_")) == [
        "score_approved_cider", "score_gold_cospar_minilm", "score_imported_bleu4",
        "score_length"]
    assert row(captions, "c1", "Bravo")[["score_imported_bleu4",
                                         "score_gold_cospar_minilm"]].isna().all()


def test_a_double_annotated_caption_counts_once_with_its_earliest_approved_verdict(
    scripted, personas, make_user
):
    second = make_user("second")
    membership_grant(study=scripted, user=second, role="annotator")
    caption = Caption.objects.get(clip__name="c3", model__name="Alpha")
    annotations_assign(
        study=scripted,
        annotators=[second, personas["annotator"]],
        captions=[caption],
        overlap_share=1.0,
    )
    later = Annotation.objects.get(caption=caption, annotator=second)
    approve(complete(later, second), personas["reviewer"])
    captions, windows = tidy_tables(scripted)
    c3 = row(captions, "c3", "Alpha")
    assert c3["annotator"] == "annotator" and c3["overview_final_verdict"] == "accept"
    assert len(windows[(windows["clip"] == "c3")]) == 3


def test_a_study_without_final_verdicts_is_refused(study):
    with pytest.raises(ProfileError, match="no final verdicts"):
        tidy_tables(study)


def test_optional_generation_columns_appear_only_when_every_caption_has_them(scripted):
    scripted.candidate_models.filter(name="Bravo").update(identifier="")
    captions, _ = tidy_tables(scripted)
    assert "identifier" not in captions.columns  # Bravo has none
    scripted.candidate_models.update(identifier="lab/model-1", route="direct", providers=["Lab"])
    captions, windows = tidy_tables(scripted)
    validate_tidy(captions, windows)
    assert set(captions["provider"]) == {"Lab"} and set(captions["route"]) == {"direct"}


@pytest.mark.parametrize(("counts", "usual"), [([3, 3, 2], 3), ([1, 2, 2, 1], 2), ([], 4)])
def test_figure_4_looks_at_the_usual_number_of_windows(counts, usual):
    import pandas as pd

    rows = [
        {"clip": f"c{n}", "model": "m", "index": i} for n, k in enumerate(counts) for i in range(k)
    ]
    assert usual_window_count(pd.DataFrame(rows, columns=["clip", "model", "index"])) == usual


def test_table_14_counts_every_generated_caption_not_only_final_verdicts(scripted):
    from scoring.metrics.analysis import failure_profile
    from scoring.profiles import generated_captions

    generated = generated_captions(scripted)
    assert len(generated) == 6  # c3/Bravo was sent but never annotated
    captions, windows = tidy_tables(scripted)
    tables = failure_profile(captions, windows, resamples=20, adjusted_resamples=5,
                             generated=generated)
    counts = tables["generation"].set_index("model")["captions"].to_dict()
    assert counts == {"Alpha": 3, "Bravo": 3}
    assert (captions["model"] == "Bravo").sum() == 2


def test_each_caption_carries_where_its_annotator_met_it(scripted):
    captions, windows = tidy_tables(scripted)
    validate_tidy(captions, windows)
    for annotation in Annotation.objects.filter(caption__clip__study=scripted,
                                                state="approved"):
        found = row(captions, annotation.caption.clip.name, annotation.caption.model.name)
        assert (found["queue_position"], found["exposure"]) == (
            annotation.queue_position, annotation.exposure)
    # Clip blocks: one annotator met both models of c1 and c2, one after the other.
    exposures = captions.groupby("clip")["exposure"].apply(sorted).to_dict()
    assert exposures == {"c1": [1, 2], "c2": [1, 2], "c3": [1]}
    assert sorted(captions["queue_position"]) == [1, 2, 3, 4, 5]


def test_annotations_assigned_before_designs_export_empty_positions(scripted):
    Annotation.objects.filter(caption__clip__name="c1").update(queue_position=None,
                                                               exposure=None)
    captions, windows = tidy_tables(scripted)
    validate_tidy(captions, windows)
    c1 = row(captions, "c1", "Alpha")
    assert c1["exposure"] is pd.NA and c1["queue_position"] is pd.NA
    assert row(captions, "c2", "Alpha")["exposure"] in (1, 2)
