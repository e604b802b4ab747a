"""An undone approval takes its scores with it: the verdict job queued at approval stores nothing
that stays, whether it finished before the undo, waits in the queue or runs through it."""

from __future__ import annotations

import pytest

from annotation.models import Annotation
from annotation.services.workflow import (
    annotation_open,
    annotation_save,
    annotation_submit,
    decision_undo,
    overview_lock,
    review_approve,
    review_claim,
)
from scoring.models import ScoreJob, ScoreResult
from scoring.services import WITHDRAWN, score_job_create, score_job_run
from tests.scoring_jobs.conftest import CORRECTED_OVERVIEW

pytestmark = pytest.mark.django_db


@pytest.fixture
def undoable(settings, fast_scoring):
    settings.UNDO_SECONDS = 60
    settings.SCORING_ON_FINAL_VERDICT = True
    return settings


def finish_verdict(assigned, personas, settings):
    """Rejected overview and first window, submitted (its own undo window closed at once), claimed,
    and approved with the approval's undo window open."""
    annotator, reviewer = personas["annotator"], personas["reviewer"]
    settings.UNDO_SECONDS = 0
    item = annotation_open(annotation=assigned, actor=annotator)

    def save(item, **changes):
        return annotation_save(annotation_id=item.pk, actor=annotator, base_version=item.version,
                               changes=changes)

    item = save(item, overview={"verdict": "reject", "text": CORRECTED_OVERVIEW, "modes": ["factual"]})
    item = overview_lock(annotation_id=item.pk, actor=annotator, base_version=item.version)
    item = save(item, windows=[{"index": 0, "verdict": "reject", "scene": "A woman and a dog.",
                                "modes": ["factual"]}, {"index": 1, "verdict": "accept"}],
                segmentation={"verdict": "accept"})
    item = annotation_submit(annotation_id=item.pk, actor=annotator, base_version=item.version)
    review_claim(annotation_id=item.pk, actor=reviewer)
    settings.UNDO_SECONDS = 60
    return review_approve(annotation_id=item.pk, actor=reviewer)


def undo(annotation, personas, capture):
    with capture(execute=True):
        return decision_undo(annotation_id=annotation.pk, actor=personas["reviewer"])


def test_scores_stored_before_the_undo_are_discarded_by_it(
    assigned, personas, undoable, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        approved = finish_verdict(assigned, personas, undoable)
    job = ScoreJob.objects.get(annotation=approved)
    assert job.status == "done" and ScoreResult.objects.filter(annotation=approved).count() == 15
    undone = undo(approved, personas, django_capture_on_commit_callbacks)
    assert undone.state == "in_review"
    assert not ScoreResult.objects.filter(annotation=approved).exists()


def test_a_job_still_queued_at_the_undo_ends_without_scoring(
    assigned, personas, undoable, django_capture_on_commit_callbacks
):
    approved = finish_verdict(assigned, personas, undoable)  # its job is not sent yet (hooks not run)
    job = score_job_create(study=approved.caption.clip.study, kind="verdict", annotation=approved,
                           enqueue=False)
    undo(approved, personas, django_capture_on_commit_callbacks)
    assert score_job_run(job_id=job.pk) == "finished"
    job.refresh_from_db()
    assert (job.status, job.errors) == ("failed", {"job": WITHDRAWN})
    assert not ScoreResult.objects.exists()


def test_a_job_running_through_the_undo_stops_and_keeps_nothing(
    assigned, personas, undoable, django_capture_on_commit_callbacks
):
    approved = finish_verdict(assigned, personas, undoable)
    job = score_job_create(study=approved.caption.clip.study, kind="verdict", annotation=approved,
                           enqueue=False)
    undone = []

    def undo_after_the_first_chunk(progress):
        if not undone:  # the overview's scores are stored; the windows' are not yet
            assert ScoreResult.objects.count() == 3
            undone.append(decision_undo(annotation_id=approved.pk, actor=personas["reviewer"]))

    with django_capture_on_commit_callbacks(execute=True):
        outcome = score_job_run(job_id=job.pk, on_progress=undo_after_the_first_chunk)
    assert outcome == "withdrawn"
    job.refresh_from_db()
    assert (job.status, job.errors) == ("failed", {"job": WITHDRAWN})
    assert not ScoreResult.objects.exists()


def test_approving_again_after_the_undo_scores_again(
    assigned, personas, undoable, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        approved = finish_verdict(assigned, personas, undoable)
    undo(approved, personas, django_capture_on_commit_callbacks)
    with django_capture_on_commit_callbacks(execute=True):
        again = review_approve(annotation_id=approved.pk, actor=personas["reviewer"])
    assert Annotation.objects.get(pk=again.pk).state == "approved"
    assert ScoreResult.objects.filter(annotation=again).count() == 15
    assert ScoreJob.objects.filter(annotation=again, status="done").count() == 2
