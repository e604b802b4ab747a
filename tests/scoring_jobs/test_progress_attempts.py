"""A job fails for good only for a reason in its own data: a run that died counts against the
job only when it got no further than every run before it (JOB_MAX_ATTEMPTS such runs fail it)."""

from __future__ import annotations

import json
import os
import time

import pytest

from scoring import profile_jobs
from scoring.models import ScoreJob
from scoring.services import score_job_run, score_jobs_recover
from tests.scoring_jobs.test_runner_and_recovery import LONG_AGO, _stalled_export, stalled_job


class Killed(BaseException):
    """The worker died under the run: nothing in the run catches it, the job stays running."""


@pytest.fixture
def sent(monkeypatch):
    """The messages recovery sends (run by the test, one dead run after another)."""
    messages: list[dict] = []
    monkeypatch.setattr("annotation.jobs.job_send", lambda task, **kw: messages.append(kw))
    return messages


def _dies_at(monkeypatch, progress: int) -> None:
    """The next run stores up to ``progress`` items of 10 (skipped ones included), then dies."""

    def execute(run):
        ScoreJob.objects.filter(pk=run.job.pk, run_token=run.token).update(
            progress_total=10, progress_done=progress)
        raise Killed

    monkeypatch.setattr("scoring.services._Run.execute", execute)


def _run_and_die(job: ScoreJob, sent: list[dict], monkeypatch, progress: int) -> dict:
    """Run the job's last message, dying at ``progress``; then recover it once its lease passed."""
    _dies_at(monkeypatch, progress)
    with pytest.raises(Killed):
        score_job_run(job_id=job.pk, task_id=sent[-1]["task_id"] if sent else job.task_id)
    ScoreJob.objects.filter(pk=job.pk).update(heartbeat_at=LONG_AGO)
    return score_jobs_recover()


@pytest.mark.django_db
def test_a_job_whose_runs_die_after_progress_is_sent_again_beyond_the_limit(
    approved, fast_scoring, settings, sent, monkeypatch
):
    settings.JOB_MAX_ATTEMPTS = 3
    job = stalled_job(approved, attempts=0, status="queued")
    for progress in (2, 4, 6, 8, 9):
        assert _run_and_die(job, sent, monkeypatch, progress) == {"resumed": [job.pk], "failed": []}
    monkeypatch.undo()  # the real run, which skips what the dead ones stored
    score_job_run(job_id=job.pk, task_id=sent[-1]["task_id"])
    job.refresh_from_db()
    assert (job.status, job.attempts, job.runs_with_progress) == ("done", 6, 5)


@pytest.mark.django_db
def test_a_job_whose_runs_die_without_progress_is_failed_after_the_limit(
    approved, fast_scoring, settings, sent, monkeypatch
):
    settings.JOB_MAX_ATTEMPTS = 3
    job = stalled_job(approved, attempts=0, status="queued")
    # The first run stored 4 items; the next three died before getting any further.
    for progress in (4, 4, 4):
        assert _run_and_die(job, sent, monkeypatch, progress) == {"resumed": [job.pk], "failed": []}
    assert _run_and_die(job, sent, monkeypatch, 4) == {"resumed": [], "failed": [job.pk]}
    job.refresh_from_db()
    assert (job.status, job.attempts, job.runs_with_progress) == ("failed", 4, 1)
    assert "stopped without finishing it (3 times without progress" in job.errors["job"]


@pytest.mark.django_db
def test_a_job_dying_at_once_every_time_is_failed_after_the_limit(
    approved, fast_scoring, settings, sent, monkeypatch
):
    settings.JOB_MAX_ATTEMPTS = 3
    job = stalled_job(approved, attempts=0, status="queued")
    assert _run_and_die(job, sent, monkeypatch, 0)["resumed"] == [job.pk]
    assert _run_and_die(job, sent, monkeypatch, 0)["resumed"] == [job.pk]
    assert _run_and_die(job, sent, monkeypatch, 0) == {"resumed": [], "failed": [job.pk]}


@pytest.mark.django_db
def test_a_dead_run_that_got_further_is_not_counted_by_recovery(approved, fast_scoring, sent):
    job = stalled_job(approved, attempts=3)
    ScoreJob.objects.filter(pk=job.pk).update(progress_total=10, progress_done=5, progress_seen=4)
    assert score_jobs_recover() == {"resumed": [job.pk], "failed": []}


# --------------------------------------------------------------------------- exports


def _export_dies_at(monkeypatch, steps: int) -> None:
    def export(*, progress, **options):
        progress(steps, 9, f"step {steps}")
        raise Killed

    monkeypatch.setattr(profile_jobs, "profile_export", export)


def _export_run_and_die(study, job: str, monkeypatch, steps: int) -> dict:
    _export_dies_at(monkeypatch, steps)
    with pytest.raises(Killed):
        profile_jobs.profile_job_run(study_id=study.pk, job_id=job)
    folder = profile_jobs.jobs_root(study) / job
    status = json.loads((folder / "status.json").read_text())
    status["updated_at"] = "2000-01-01T00:00:00+00:00"
    (folder / "status.json").write_text(json.dumps(status))
    past = time.time() - 10**6
    os.utime(folder / "claim", (past, past))
    return profile_jobs.profile_jobs_recover(study=study)


def _queued_export(study) -> str:
    job = _stalled_export(study, attempts=0, done_seen=0)
    folder = profile_jobs.jobs_root(study) / job
    status = json.loads((folder / "status.json").read_text())
    (folder / "status.json").write_text(json.dumps({**status, "state": "queued", "done": 0}))
    (folder / "claim").unlink()
    return job


@pytest.mark.django_db
def test_an_export_whose_runs_die_after_progress_is_sent_again_beyond_the_limit(
    study, settings, monkeypatch
):
    settings.JOB_MAX_ATTEMPTS = 3
    monkeypatch.setattr(profile_jobs, "_send", lambda study_id, job_id: None)
    job = _queued_export(study)
    for steps in (2, 3, 5, 6, 8):
        assert _export_run_and_die(study, job, monkeypatch, steps) == {"resumed": [job], "failed": []}
    status = profile_jobs.profile_job_status(study=study, job_id=job)
    assert (status["state"], status["attempts"], status["runs_with_progress"]) == ("running", 5, 4)


@pytest.mark.django_db
def test_an_export_whose_runs_die_without_progress_is_failed_after_the_limit(
    study, settings, monkeypatch
):
    settings.JOB_MAX_ATTEMPTS = 3
    monkeypatch.setattr(profile_jobs, "_send", lambda study_id, job_id: None)
    job = _queued_export(study)
    for steps in (5, 5, 4):
        assert _export_run_and_die(study, job, monkeypatch, steps) == {"resumed": [job], "failed": []}
    assert _export_run_and_die(study, job, monkeypatch, 5) == {"resumed": [], "failed": [job]}
    status = profile_jobs.profile_job_status(study=study, job_id=job)
    assert status["state"] == "failed"
    assert "stopped without finishing 3 times without progress" in status["error"]


@pytest.mark.django_db
def test_an_export_whose_dead_run_got_further_is_sent_again(study, monkeypatch):
    job = _stalled_export(study, attempts=3, done_seen=2)
    monkeypatch.setattr(profile_jobs, "_send", lambda study_id, job_id: None)
    assert profile_jobs.profile_jobs_recover(study=study) == {"resumed": [job], "failed": []}


# --------------------------------------------------------------------------- study jobs


def _study_job(study, **fields) -> ScoreJob:
    return ScoreJob.objects.create(study=study, kind="study", metrics=["words_changed"],
                                   task_id="t", created_at=LONG_AGO, **fields)


@pytest.mark.django_db
def test_a_study_job_dying_in_its_planning_is_failed_after_the_limit(study, settings, sent,
                                                                     monkeypatch):
    settings.JOB_MAX_ATTEMPTS = 3

    def plan(job):
        raise Killed

    monkeypatch.setattr("scoring.chunks.plan", plan)
    job = _study_job(study)
    outcomes = []
    for _ in range(3):
        with pytest.raises(Killed):
            score_job_run(job_id=job.pk, task_id=sent[-1]["task_id"] if sent else job.task_id)
        ScoreJob.objects.filter(pk=job.pk).update(heartbeat_at=LONG_AGO)
        outcomes.append(score_jobs_recover())
    assert outcomes == [{"resumed": [job.pk], "failed": []}] * 2 + [{"resumed": [], "failed": [job.pk]}]


@pytest.mark.django_db
def test_a_study_job_whose_chunks_were_stored_since_is_sent_again(study, settings, sent):
    settings.JOB_MAX_ATTEMPTS = 3
    # Claimed three times (planning), then its chunks went on: 5 items stored since.
    job = _study_job(study, status="running", attempts=3, chunks_total=4, chunks_done=2,
                     progress_total=10, progress_done=5, heartbeat_at=LONG_AGO)
    assert score_jobs_recover() == {"resumed": [job.pk], "failed": []}


@pytest.mark.django_db
def test_planning_taken_over_by_another_run_stops(study, monkeypatch):
    def plan(job):
        # Another run claims the job while this one plans (its heartbeat looked stale).
        ScoreJob.objects.filter(pk=job.pk).update(run_token="another run")
        yield object()
        pytest.fail("planned on after the job was taken over")

    monkeypatch.setattr("scoring.chunks.plan", plan)
    job = _study_job(study)
    assert score_job_run(job_id=job.pk, task_id="t") == "busy"
    assert not job.chunks.exists()
