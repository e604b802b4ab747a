"""The annotation workflow: drafts with versions, the overview lock, submit, and QC."""

import importlib
import time

import pytest
from django.db import IntegrityError, transaction

from annotation.errors import ServiceError
from annotation.models import Annotation, AuditEvent, CorrectionPass
from annotation.rules import workflow
from annotation.services.annotating import ACTIVE_SLACK_SECONDS
from annotation.services.workflow import (
    Conflict,
    NotAllowed,
    annotation_open,
    annotation_save,
    annotation_submit,
    annotations_assign,
    final_pass,
    overview_lock,
    review_amend,
    review_approve,
    review_claim,
    review_return,
)
from tests.annotation.studybuild import worked

pytestmark = pytest.mark.django_db

REJECTED_OVERVIEW = {"verdict": "reject", "text": "A test card with a counter.", "modes": ["factual"]}


def save(annotation, actor, **changes):
    return annotation_save(annotation_id=annotation.pk, actor=actor, base_version=annotation.version, changes=changes)


def complete(annotation, annotator):
    """Drive an annotation through a full, valid annotator pass."""
    annotation = save(annotation, annotator, overview=REJECTED_OVERVIEW)
    annotation = overview_lock(annotation_id=annotation.pk, actor=annotator, base_version=annotation.version)
    annotation = save(annotation, annotator, windows=[
        {"index": 0, "verdict": "accept"},
        {"index": 1, "verdict": "reject", "scene": "The counter runs.", "end": 3.5, "modes": ["temporal"]},
        {"index": 2, "verdict": "accept"},
    ], segmentation={"verdict": "accept"})
    return annotation_submit(annotation_id=annotation.pk, actor=annotator, base_version=annotation.version)


def test_migration_transitions_match_the_state_machine():
    frozen = set(importlib.import_module("annotation.migrations.0005_annotation_state_transitions").ALLOWED)
    code = {(source, t.target) for t in workflow.TRANSITIONS.values() for source in t.sources}
    assert frozen == code


def test_round_robin_gives_each_caption_once_and_overlap_to_a_second_annotator(personas, study, caption, make_user):
    from annotation.services.studies import membership_grant

    second = make_user("second")
    membership_grant(study=study, user=second, role="annotator")
    report = annotations_assign(study=study, annotators=[personas["annotator"], second], overlap_share=1.0)
    assert report.created == 2
    assert set(caption.annotations.values_list("annotator__username", flat=True)) == {"annotator", "second"}
    again = annotations_assign(study=study, annotators=[personas["annotator"], second], overlap_share=1.0)
    assert again.created == 0


def test_assigning_freezes_the_taxonomy(study, caption, personas):
    annotations_assign(study=study, annotators=[personas["annotator"]])
    study.taxonomy.refresh_from_db()
    assert study.taxonomy.is_frozen


def test_only_annotators_can_be_assigned(study, caption, personas):
    with pytest.raises(ServiceError, match="not an annotator"):
        annotations_assign(study=study, annotators=[personas["reviewer"]])


def test_a_save_based_on_an_old_version_is_a_conflict_carrying_the_current_state(annotation, personas):
    annotator = personas["annotator"]
    stale = Annotation.objects.get(pk=annotation.pk)
    save(annotation, annotator, overview={"verdict": "reject", "text": "tab one"})
    with pytest.raises(Conflict) as conflict:
        save(stale, annotator, overview={"verdict": "reject", "text": "tab two"})
    assert conflict.value.current["annotator_pass"]["overview"]["text"] == "tab one"
    assert CorrectionPass.objects.get().overview_text == "tab one"


def test_someone_else_cannot_save_into_an_annotation(annotation, personas):
    with pytest.raises(NotAllowed):
        save(annotation, personas["reviewer"], overview={"verdict": "accept"})


def test_reject_without_a_change_or_a_mode_cannot_be_locked(annotation, personas):
    annotator = personas["annotator"]
    annotation = save(annotation, annotator, overview={"verdict": "reject", "text": annotation.caption.overview})
    with pytest.raises(ServiceError, match="differs from the original.*at least one failure mode"):
        overview_lock(annotation_id=annotation.pk, actor=annotator, base_version=annotation.version)


def test_accept_drops_modes_and_text(annotation, personas):
    save(annotation, personas["annotator"], overview={"verdict": "accept", "modes": ["factual"], "text": "x"})
    correction = CorrectionPass.objects.get()
    assert (correction.overview_modes, correction.overview_text) == ([], "")


def test_segmentation_is_refused_on_a_unit(annotation, personas):
    with pytest.raises(ServiceError, match="once per caption"):
        save(annotation, personas["annotator"], overview={"verdict": "reject", "modes": ["segmentation"]})


def test_window_pass_opens_only_after_the_overview_lock(annotation, personas):
    with pytest.raises(ServiceError, match="Submit the overview verdict first"):
        save(annotation, personas["annotator"], windows=[{"index": 0, "verdict": "accept"}])


def test_locked_overview_cannot_change(annotation, personas):
    annotator = personas["annotator"]
    annotation = save(annotation, annotator, overview=REJECTED_OVERVIEW)
    annotation = overview_lock(annotation_id=annotation.pk, actor=annotator, base_version=annotation.version)
    with pytest.raises(ServiceError, match="locked"):
        save(annotation, annotator, overview={"verdict": "accept"})


def test_incomplete_pass_cannot_be_submitted_and_says_what_is_missing(annotation, personas):
    annotator = personas["annotator"]
    annotation = save(annotation, annotator, overview={"verdict": "accept"})
    annotation = overview_lock(annotation_id=annotation.pk, actor=annotator, base_version=annotation.version)
    with pytest.raises(ServiceError, match="Window 1: accept or reject it.*Judge the segmentation"):
        annotation_submit(annotation_id=annotation.pk, actor=annotator, base_version=annotation.version)


def test_segmentation_reject_stores_the_corrected_boundaries_beside_the_original(annotation, personas):
    annotator = personas["annotator"]
    annotation = save(annotation, annotator, overview={"verdict": "accept"})
    annotation = overview_lock(annotation_id=annotation.pk, actor=annotator, base_version=annotation.version)
    merged = [{"start": 0, "end": 4, "scene": "Bars, counter.", "shot": "Static."},
              {"start": 4, "end": 6, "scene": "Five.", "shot": "Static."}]
    save(annotation, annotator, segmentation={"verdict": "reject", "modes": ["segmentation"], "windows": merged})
    assert CorrectionPass.objects.get().corrected_windows[0]["end"] == 4
    assert annotation.caption.windows.count() == 3


def test_overlapping_corrected_boundaries_are_refused(annotation, personas):
    annotator = personas["annotator"]
    annotation = save(annotation, annotator, overview={"verdict": "accept"})
    annotation = overview_lock(annotation_id=annotation.pk, actor=annotator, base_version=annotation.version)
    with pytest.raises(ServiceError, match="starts before window 1 ends"):
        save(annotation, annotator, segmentation={"verdict": "reject", "modes": ["segmentation"],
                                                  "windows": [{"start": 0, "end": 4}, {"start": 3, "end": 6}]})


@pytest.mark.parametrize(("start", "end", "problem"), [
    (None, 2, "start must be a number"),
    (0, "soon", "end must be a number"),
    (3, 2, "not a span inside the clip"),
    (-1, 2, "not a span inside the clip"),
    (0, 99, "not a span inside the clip"),
])
def test_impossible_window_times_are_refused_with_the_field_named(annotation, personas, start, end, problem):
    annotator = personas["annotator"]
    annotation = save(annotation, annotator, overview={"verdict": "accept"})
    annotation = overview_lock(annotation_id=annotation.pk, actor=annotator, base_version=annotation.version)
    with pytest.raises(ServiceError, match=problem):
        save(annotation, annotator, windows=[{"index": 0, "verdict": "reject", "start": start, "end": end}])
    assert not CorrectionPass.objects.get().windows.exists()


def test_full_cycle_approve_keeps_the_annotator_pass_as_final(annotation, personas):
    annotation = complete(annotation, personas["annotator"])
    assert annotation.state == "submitted"
    review_claim(annotation_id=annotation.pk, actor=personas["reviewer"])
    annotation = review_approve(annotation_id=annotation.pk, actor=personas["reviewer"])
    assert annotation.state == "approved"
    assert final_pass(annotation).kind == "annotator"
    assert list(AuditEvent.objects.filter(annotation=annotation).values_list("action", flat=True)) == [
        "open", "save", "lock_overview", "save", "submit", "claim", "approve",
    ]


def test_amend_stores_the_qc_pass_beside_the_annotator_pass(annotation, personas):
    annotation = complete(annotation, personas["annotator"])
    review_claim(annotation_id=annotation.pk, actor=personas["reviewer"])
    annotation = review_amend(annotation_id=annotation.pk, actor=personas["reviewer"], changes={
        "overview": {"verdict": "reject", "text": "A test card; a counter counts to five.", "modes": ["omission"]},
    })
    passes = {p.kind: p for p in annotation.passes.all()}
    assert passes["annotator"].overview_text == REJECTED_OVERVIEW["text"]
    assert passes["qc"].overview_modes == ["omission"]
    assert final_pass(annotation).kind == "qc"


def returned(annotation, personas, *units):
    """Complete, claim and return `annotation` naming `units` ((unit, comment) pairs)."""
    annotation = complete(annotation, personas["annotator"])
    review_claim(annotation_id=annotation.pk, actor=personas["reviewer"])
    annotation = review_return(annotation_id=annotation.pk, actor=personas["reviewer"],
                               units=[{"unit": u, "comment": c} for u, c in units])
    return annotation_open(annotation=annotation, actor=personas["annotator"])


def test_a_return_names_its_units_each_with_a_comment(annotation, personas):
    annotation = complete(annotation, personas["annotator"])
    review_claim(annotation_id=annotation.pk, actor=personas["reviewer"])
    for units, message in (
        ([], "Name at least one unit"),
        ([{"unit": "overview", "comment": " "}], "Overview: say what to fix"),
        ([{"unit": "window:7", "comment": "Look."}], "'window:7' is not a unit of this caption"),
    ):
        with pytest.raises(ServiceError, match=message):
            review_return(annotation_id=annotation.pk, actor=personas["reviewer"], units=units)
    annotation = review_return(annotation_id=annotation.pk, actor=personas["reviewer"], units=[
        {"unit": "segmentation", "comment": "The cut is at 3 s."},
        {"unit": "window:1", "comment": "Window 2 is fine."},
    ])
    assert annotation.state == "returned"
    assert annotation.return_comment == "Window 2: Window 2 is fine.; Segmentation: The cut is at 3 s."
    assert [u["unit"] for u in annotation.returned_units] == ["window:1", "segmentation"]
    assert annotation.overview_locked_at is not None  # the overview was not returned


def test_a_returned_overview_reopens_with_the_window_pass_kept(annotation, personas):
    annotator = personas["annotator"]
    annotation = returned(annotation, personas, ("overview", "Say that it counts to five."))
    assert annotation.state == "in_progress" and annotation.overview_locked_at is None
    kept = CorrectionPass.objects.get(annotation=annotation, kind="annotator")
    assert kept.windows.get(window__index=1).scene == "The counter runs."
    annotation = save(annotation, annotator, overview={"text": "A test card; a counter counts to five."})
    annotation = overview_lock(annotation_id=annotation.pk, actor=annotator, base_version=annotation.version)
    annotation = annotation_submit(annotation_id=annotation.pk, actor=annotator, base_version=annotation.version)
    assert annotation.state == "submitted"
    assert annotation.passes.get(kind="annotator").windows.get(window__index=1).end == 3.5


def test_units_that_were_not_returned_stay_as_submitted(annotation, personas):
    annotation = returned(annotation, personas, ("window:1", "Window 2 ends at 4 s."))
    for changes, unit in (
        ({"overview": {"verdict": "accept"}}, "Overview"),
        ({"windows": [{"index": 0, "verdict": "reject"}]}, "Window 1"),
        ({"segmentation": {"verdict": "reject"}}, "Segmentation"),
    ):
        with pytest.raises(ServiceError, match=f"QC did not return {unit}"):
            save(annotation, personas["annotator"], **changes)
    annotation = save(annotation, personas["annotator"], windows=[{"index": 1, "end": 4.0}])
    assert annotation.passes.get(kind="annotator").windows.get(window__index=1).end == 4.0


def test_resubmitting_a_returned_unit_unchanged_needs_a_reply(annotation, personas):
    annotator = personas["annotator"]
    annotation = returned(annotation, personas, ("window:1", "Window 2 ends at 4 s."),
                          ("segmentation", "Check the cut."))
    annotation = save(annotation, annotator, segmentation={"verdict": "reject", "modes": ["segmentation"],
                                                           "windows": [{"start": 0, "end": 3}, {"start": 3, "end": 6}]})
    with pytest.raises(ServiceError, match="Window 2 was returned .* and is unchanged") as refused:
        annotation_submit(annotation_id=annotation.pk, actor=annotator, base_version=annotation.version)
    assert "Segmentation" not in str(refused.value)  # changed, so no reply is needed
    with pytest.raises(ServiceError, match="Only returned units take a reply"):
        annotation_submit(annotation_id=annotation.pk, actor=annotator, base_version=annotation.version,
                          replies={"overview": "x", "window:1": "y"})
    reply = "I disagree because the counter is still visible at 4.5 s."
    annotation = annotation_submit(annotation_id=annotation.pk, actor=annotator,
                                   base_version=annotation.version, replies={"window:1": reply})
    assert annotation.state == "submitted"
    thread = {u["unit"]: u for u in annotation.returned_units}
    assert (thread["window:1"]["comment"], thread["window:1"]["reply"]) == ("Window 2 ends at 4 s.", reply)
    event = AuditEvent.objects.filter(annotation=annotation, action="submit").last()
    assert event.after["replies"] == [
        {"unit": "window:1", "comment": "Window 2 ends at 4 s.", "reply": reply, "changed": False},
        {"unit": "segmentation", "comment": "Check the cut.", "reply": "", "changed": True},
    ]
    assert AuditEvent.objects.filter(annotation=annotation, action="return").last().after["units"] == [
        {"unit": "window:1", "comment": "Window 2 ends at 4 s."},
        {"unit": "segmentation", "comment": "Check the cut."},
    ]


def test_two_reviewers_racing_for_one_item_one_wins_the_other_is_told(annotation, personas, make_user, study):
    from annotation.services.studies import membership_grant

    other = make_user("other-reviewer")
    membership_grant(study=study, user=other, role="reviewer")
    annotation = complete(annotation, personas["annotator"])
    review_claim(annotation_id=annotation.pk, actor=personas["reviewer"])
    with pytest.raises(Conflict, match="claimed by reviewer"):
        review_claim(annotation_id=annotation.pk, actor=other)


def test_expired_claim_can_be_taken_over(annotation, personas, make_user, study):
    from annotation.services.studies import membership_grant

    other = make_user("other-reviewer")
    membership_grant(study=study, user=other, role="reviewer")
    annotation = complete(annotation, personas["annotator"])
    review_claim(annotation_id=annotation.pk, actor=personas["reviewer"], minutes=-1)
    assert review_claim(annotation_id=annotation.pk, actor=other).reviewer == other


def test_nobody_reviews_their_own_annotation(annotation, personas, study):
    from annotation.services.studies import membership_grant

    membership_grant(study=study, user=personas["annotator"], role="reviewer")
    annotation = complete(annotation, personas["annotator"])
    with pytest.raises(NotAllowed, match="own annotation"):
        review_claim(annotation_id=annotation.pk, actor=personas["annotator"])


def test_database_refuses_an_illegal_transition(annotation):
    with pytest.raises(IntegrityError), transaction.atomic():
        Annotation.objects.filter(pk=annotation.pk).update(state="assigned")


def test_approved_is_final_even_for_raw_updates(annotation, personas):
    annotation = complete(annotation, personas["annotator"])
    review_claim(annotation_id=annotation.pk, actor=personas["reviewer"])
    review_approve(annotation_id=annotation.pk, actor=personas["reviewer"])
    with pytest.raises(IntegrityError), transaction.atomic():
        Annotation.objects.filter(pk=annotation.pk).update(state="returned", return_comment="x")


def test_annotations_and_audit_events_are_never_deleted(annotation):
    with pytest.raises(IntegrityError), transaction.atomic():
        AuditEvent.objects.all().delete()
    with pytest.raises(IntegrityError), transaction.atomic():
        Annotation.objects.filter(pk=annotation.pk).delete()


def test_active_time_accumulates_and_is_capped_per_save(annotation, personas):
    worked(annotation, 3600)
    annotation = save(annotation, personas["annotator"], active_seconds=12.5)
    worked(annotation, 3600)
    annotation = save(annotation, personas["annotator"], active_seconds=99999)
    assert annotation.active_seconds == pytest.approx(612.5)
    assert Annotation.objects.get(pk=annotation.pk).active_seconds == pytest.approx(612.5)


def test_the_first_saves_of_a_new_visit_add_only_the_time_since_it_opened(annotation, personas):
    """Issue 27: an item last saved an hour ago, opened again, then three saves claiming ten
    minutes each within half a second: a few seconds are credited, not 610."""
    annotator = personas["annotator"]
    worked(annotation, 3600)
    annotation = annotation_open(annotation=annotation, actor=annotator)
    before = Annotation.objects.get(pk=annotation.pk).active_seconds
    started = time.monotonic()
    for _ in range(3):
        annotation = save(annotation, annotator, active_seconds=600)
    elapsed = time.monotonic() - started
    added = Annotation.objects.get(pk=annotation.pk).active_seconds - before
    assert added <= elapsed + ACTIVE_SLACK_SECONDS + 0.5
    assert added < 7


def test_three_saves_at_once_add_the_slack_only_once(annotation, personas):
    for _ in range(3):
        annotation = save(annotation, personas["annotator"], active_seconds=600)
    assert Annotation.objects.get(pk=annotation.pk).active_seconds < ACTIVE_SLACK_SECONDS + 2


def test_active_time_is_capped_at_the_wall_time_since_the_previous_save(annotation, personas):
    """Three saves each claiming 10 minutes, sent within a second, credit seconds, not 30 minutes."""
    for _ in range(3):
        annotation = save(annotation, personas["annotator"], active_seconds=600)
    stored = Annotation.objects.get(pk=annotation.pk)
    assert stored.active_seconds < 3 * (ACTIVE_SLACK_SECONDS + 2)
    assert stored.last_saved_at is not None
    worked(stored, 40)
    annotation = save(stored, personas["annotator"], active_seconds=30)
    assert Annotation.objects.get(pk=annotation.pk).active_seconds == pytest.approx(stored.active_seconds + 30)
