"""A final verdict whose scoring job was never made (PostgreSQL dropped, or the web process
died, right after the approval committed: its on_commit hook never ran) gets its job from the
recovery clock, once, and only where the verdict's hook would have made one."""

from __future__ import annotations

import threading

import pytest
from django.db import connection, transaction

from annotation.models import Annotation
from annotation.services.lifecycle import study_close
from scoring.jobs_recovery import jobs_recover
from scoring.models import ScoreJob
from scoring.verdict_jobs import score_final_verdict, score_verdicts_recover, verdict_job_create

pytestmark = [pytest.mark.postgres]

RECOVERED = "verdicts without their scoring job"


@pytest.fixture
def scoring_verdicts(settings, fast_scoring):
    settings.SCORING_ON_FINAL_VERDICT = True
    return settings


def verdict_jobs(annotation) -> list[ScoreJob]:
    return list(ScoreJob.objects.filter(kind=ScoreJob.Kind.VERDICT, annotation=annotation))


@pytest.mark.django_db
def test_a_verdict_without_its_job_gets_one_at_the_next_round_and_none_at_the_one_after(
    approved, scoring_verdicts, django_capture_on_commit_callbacks
):
    assert approved.state == Annotation.State.APPROVED and verdict_jobs(approved) == []  # the hook was lost
    with django_capture_on_commit_callbacks() as sent:
        done = jobs_recover(media=False)
    [job] = verdict_jobs(approved)
    assert done[RECOVERED] == {"resumed": [job.pk], "failed": []}
    assert (job.status, job.metrics) == ("queued", scoring_verdicts.SCORING_VERDICT_METRICS)
    assert len(sent) == 1  # sent once the round's transaction commits
    assert jobs_recover(media=False)[RECOVERED] == {"resumed": [], "failed": []}
    score_final_verdict(approved.pk)  # the hook, arriving late, finds the job made
    assert len(verdict_jobs(approved)) == 1


@pytest.mark.django_db
def test_a_verdict_whose_hook_ran_gets_no_second_job(assigned, personas, scoring_verdicts,
                                                     django_capture_on_commit_callbacks):
    from tests.scoring_jobs.conftest import finish_verdict

    with django_capture_on_commit_callbacks(execute=True):
        approved = finish_verdict(assigned, personas)
    assert len(verdict_jobs(approved)) == 1
    assert score_verdicts_recover() == {"resumed": [], "failed": []}
    assert len(verdict_jobs(approved)) == 1


@pytest.mark.django_db
def test_a_closed_studys_verdict_is_left_without_a_job(approved, scoring_verdicts, study, personas):
    study_close(study=study, actor=personas["admin"], confirm=True)
    assert score_verdicts_recover() == {"resumed": [], "failed": []}
    assert verdict_jobs(approved) == []


@pytest.mark.django_db
def test_no_job_is_made_while_verdicts_are_not_scored(approved, scoring_verdicts):
    scoring_verdicts.SCORING_ON_FINAL_VERDICT = False
    assert score_verdicts_recover() == {"resumed": [], "failed": []}
    assert verdict_jobs(approved) == []


@pytest.mark.django_db(transaction=True)
def test_two_recoveries_at_once_make_one_job(approved, scoring_verdicts):
    """One recovery holds the annotation's row while it makes the job; the other, which found
    the verdict without a job before that committed, waits for the row and then finds the job."""
    if connection.vendor != "postgresql":
        pytest.skip("row locks need PostgreSQL")
    ScoreJob.objects.filter(annotation=approved).delete()  # outside a test's transaction the hook ran: as if lost
    other: dict = {}

    def recover() -> None:
        try:
            other["report"] = score_verdicts_recover()
        finally:
            connection.close()

    with transaction.atomic():
        mine = verdict_job_create(annotation_id=approved.pk)
        assert mine is not None
        thread = threading.Thread(target=recover)
        thread.start()
        thread.join(timeout=2)
        assert thread.is_alive()  # waiting for the row this transaction holds
    thread.join(timeout=30)
    assert other["report"] == {"resumed": [], "failed": []}
    assert [job.pk for job in verdict_jobs(approved)] == [mine.pk]
