"""Jobs never run inside a request, and jobs whose process died are resumed or failed."""

from __future__ import annotations

import io
import json
import threading
import time

import pytest
from django.core.management import call_command
from rest_framework.test import APIClient

from annotation.jobs import job_send
from scoring import profile_jobs
from scoring.models import ScoreJob
from scoring.services import score_job_create, score_jobs_recover
from scoring.tasks import run_score_job

JOBS = "/api/studies/s1/score-jobs/"
EDIT = ["words_changed", "char_similarity", "near_total"]
LONG_AGO = "2000-01-01T00:00Z"


def client_for(user):
    client = APIClient()
    client.force_authenticate(user)
    return client


def wait_for(predicate, what: str, seconds: float = 30.0):
    """Poll until ``predicate()`` is true; a job thread works in the background."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    pytest.fail(f"gave up waiting for {what}")


def stalled_job(approved, *, attempts: int, status: str = "running") -> ScoreJob:
    job = score_job_create(
        study=approved.caption.clip.study, kind="verdict", annotation=approved, metrics=EDIT,
        enqueue=False,
    )
    ScoreJob.objects.filter(pk=job.pk).update(
        status=status, attempts=attempts, heartbeat_at=LONG_AGO if status == "running" else None,
        created_at=LONG_AGO,
    )
    return job


@pytest.mark.postgres  # a job thread sees committed rows only (SQLite cannot flush the audit)
@pytest.mark.django_db(transaction=True)
def test_without_a_broker_score_now_answers_before_the_job_runs(
    personas, approved, fast_scoring, settings, monkeypatch
):
    settings.JOB_RUNNER = "threads"
    release = threading.Event()
    real = run_score_job.run

    def held(job_id):
        release.wait(timeout=10)
        return real(job_id)

    monkeypatch.setattr(run_score_job, "run", held)
    answer = client_for(personas["admin"]).post(JOBS, {"metrics": EDIT}, format="json")
    assert answer.status_code == 202
    # The request did not wait for the job: it is still waiting for a job thread.
    assert answer.json()["status"] == "queued"
    release.set()
    job = ScoreJob.objects.get(pk=answer.json()["id"])
    wait_for(lambda: ScoreJob.objects.get(pk=job.pk).finished, "the job to finish")
    assert ScoreJob.objects.get(pk=job.pk).status == "done"


@pytest.mark.postgres  # a job thread sees committed rows only (SQLite cannot flush the audit)
@pytest.mark.django_db(transaction=True)
def test_a_job_failing_in_a_job_thread_is_marked_failed(approved, fast_scoring, settings,
                                                        monkeypatch):
    settings.JOB_RUNNER = "threads"

    def broken(self):
        raise RuntimeError("the scorer exploded")

    monkeypatch.setattr("scoring.services._Run.execute", broken)
    job = stalled_job(approved, attempts=0, status="queued")
    job_send(run_score_job, args=[job.pk], task_id=job.task_id).result(timeout=30)
    job.refresh_from_db()
    assert job.status == "failed"
    assert job.errors["job"] == "the scorer exploded"


def test_a_job_sent_to_a_task_path_that_does_not_exist_is_refused():
    # Services name their tasks by dotted path (they never import a task module): a typo fails loudly.
    with pytest.raises(ImportError):
        job_send("scoring.tasks.no_such_task", args=[1])


@pytest.mark.django_db
def test_a_running_job_whose_process_died_is_sent_again_and_finishes(approved, fast_scoring):
    job = stalled_job(approved, attempts=1)
    assert score_jobs_recover() == {"resumed": [job.pk], "failed": []}
    job.refresh_from_db()
    assert (job.status, job.attempts) == ("done", 2)


@pytest.mark.django_db
def test_a_job_that_stalled_too_often_is_marked_failed_saying_why(
    personas, approved, fast_scoring, settings
):
    settings.JOB_MAX_ATTEMPTS = 3
    job = stalled_job(approved, attempts=3)
    # Looking at the job table is enough to see it.
    table = client_for(personas["admin"]).get(JOBS).json()["results"]
    assert [(row["id"], row["status"]) for row in table] == [(job.pk, "failed")]
    assert "stopped without finishing it (3 times" in table[0]["errors"]["job"]


@pytest.mark.django_db
def test_a_job_with_a_live_heartbeat_is_left_alone(approved, fast_scoring):
    job = stalled_job(approved, attempts=1)
    ScoreJob.objects.filter(pk=job.pk).update(heartbeat_at="2999-01-01T00:00Z")
    assert score_jobs_recover() == {"resumed": [], "failed": []}
    assert ScoreJob.objects.get(pk=job.pk).status == "running"


@pytest.mark.django_db
def test_two_recoveries_at_once_send_a_stalled_job_once(approved, fast_scoring, monkeypatch):
    job = stalled_job(approved, attempts=1)
    sent = []
    monkeypatch.setattr("annotation.jobs.job_send", lambda task, **kw: sent.append(kw))
    first = score_jobs_recover()
    second = score_jobs_recover()
    assert (first["resumed"], second["resumed"], len(sent)) == ([job.pk], [], 1)


@pytest.mark.django_db
@pytest.mark.parametrize("runner", ["threads", "celery"])
def test_a_queued_job_whose_message_was_lost_is_sent_again_once_a_lease(
    approved, fast_scoring, settings, monkeypatch, runner
):
    # Lost with its job thread, or with a Redis restarted without its data (the soak does that).
    settings.JOB_RUNNER = runner
    job = stalled_job(approved, attempts=0, status="queued")
    sent = []
    monkeypatch.setattr("annotation.jobs.job_send", lambda task, **kw: sent.append(kw))
    assert score_jobs_recover() == {"resumed": [job.pk], "failed": []}
    assert score_jobs_recover() == {"resumed": [], "failed": []}  # renewed: not at every look
    # Under a new task id, which the job keeps (see test_one_message_per_job.py).
    resent = ScoreJob.objects.get(pk=job.pk).task_id
    assert resent != job.task_id
    assert sent == [{"args": [job.pk], "task_id": resent, "queue": None, "countdown": None}]


@pytest.mark.django_db
def test_a_job_queued_a_moment_ago_is_left_waiting(approved, fast_scoring, monkeypatch):
    job = stalled_job(approved, attempts=0, status="queued")
    ScoreJob.objects.filter(pk=job.pk).update(created_at="2999-01-01T00:00Z")
    monkeypatch.setattr("annotation.jobs.job_send", lambda task, **kw: pytest.fail("sent"))
    assert score_jobs_recover() == {"resumed": [], "failed": []}


@pytest.mark.django_db
def test_an_export_whose_message_was_lost_is_sent_again(study, monkeypatch, settings):
    settings.JOB_RUNNER = "celery"
    job = _stalled_export(study, attempts=0)
    folder = profile_jobs.jobs_root(study) / job
    status = json.loads((folder / "status.json").read_text())
    (folder / "status.json").write_text(json.dumps({**status, "state": "queued", "started_at": None}))
    (folder / "claim").unlink()
    sent = []
    monkeypatch.setattr(profile_jobs, "_send", lambda study_id, job_id: sent.append(job_id))
    assert profile_jobs.profile_jobs_recover(study=study) == {"resumed": [job], "failed": []}
    assert profile_jobs.profile_jobs_recover(study=study) == {"resumed": [], "failed": []}
    assert sent == [job]


def _stalled_export(study, *, attempts: int, done_seen: int = 3) -> str:
    """An export whose run died at step 3; ``done_seen``: the furthest step a run before it
    reached (3: the dead run got no further, it made no progress)."""
    from annotation.models import Study

    study = Study.objects.get(pk=study.pk)
    job = "a" * 32
    folder = profile_jobs.jobs_root(study) / job
    folder.mkdir(parents=True)
    (folder / "claim").write_text(json.dumps({"token": "dead"}))
    (folder / "status.json").write_text(json.dumps({
        "job": job, "study": study.slug, "state": "running", "done": 3, "total": 9,
        "step": "bootstrap", "error": "", "requested_by": "researcher", "attempts": attempts,
        "done_seen": done_seen,
        "options": {"resamples": 20, "adjusted_resamples": 20, "seed": 0, "paired_only": False},
        "created_at": "2000-01-01T00:00:00+00:00", "updated_at": "2000-01-01T00:00:00+00:00",
        "started_at": "2000-01-01T00:00:00+00:00", "finished_at": None,
    }))
    return job


@pytest.mark.django_db
def test_an_export_whose_process_died_is_sent_again(study, monkeypatch):
    job = _stalled_export(study, attempts=1)
    sent = []
    monkeypatch.setattr(profile_jobs, "_send", lambda study_id, job_id: sent.append(job_id))
    assert profile_jobs.profile_jobs_recover(study=study) == {"resumed": [job], "failed": []}
    assert sent == [job]
    folder = profile_jobs.jobs_root(study) / job
    # The dead run's claim is gone, so the new run can claim the job.
    assert not (folder / "claim").exists()
    # Sent once: the status changed just now.
    assert profile_jobs.profile_jobs_recover(study=study) == {"resumed": [], "failed": []}


@pytest.mark.django_db
def test_an_export_that_stalled_too_often_shows_as_failed_on_the_page(client, personas, study):
    job = _stalled_export(study, attempts=3)
    client.force_login(personas["researcher"])
    page = client.get(f"/studies/{study.slug}/profiles/")
    assert page.status_code == 200
    status = profile_jobs.profile_job_status(study=study, job_id=job)
    assert status["state"] == "failed"
    assert "stopped without finishing 3 times" in status["error"]
    assert "stopped without finishing 3 times" in page.content.decode()


@pytest.mark.django_db
def test_recover_jobs_command_says_what_it_did(approved, fast_scoring, settings):
    settings.JOB_MAX_ATTEMPTS = 2
    resumed = stalled_job(approved, attempts=1)
    failed = stalled_job(approved, attempts=2)
    out = io.StringIO()
    call_command("recover_jobs", stdout=out)
    assert f"scoring: 1 sent again [{resumed.pk}], 1 failed [{failed.pk}]" in out.getvalue()
    assert ScoreJob.objects.get(pk=resumed.pk).status == "done"


STARTED_WHILE_THE_BROKER_IS_DOWN = """
import django, json
django.setup()
from annotation.models import Annotation
from scoring.services import score_job_create
annotation = Annotation.objects.get(pk={annotation})
job = score_job_create(study=annotation.caption.clip.study, kind="verdict", annotation=annotation,
                       metrics={metrics!r})
job.refresh_from_db()
print(json.dumps({{"id": job.pk, "status": job.status, "errors": job.errors}}))
"""


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_job_started_while_the_broker_is_down_stays_queued_for_recovery(
    approved, fast_scoring, closed_port
):
    """A web process whose Redis is stopped: the job is not failed, and recovery sends it."""
    import os
    import subprocess
    import sys

    from django.db import connection

    from tests.conftest import REPO

    db = connection.settings_dict
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings", "JOB_RUNNER": "celery",
           "CELERY_TASK_ALWAYS_EAGER": "0", "SCORING_VERDICT_METRICS": ",".join(EDIT),
           "CELERY_BROKER_URL": f"redis://127.0.0.1:{closed_port}/0",
           "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}"}
    started = subprocess.run(
        [sys.executable, "-c", STARTED_WHILE_THE_BROKER_IS_DOWN.format(
            annotation=approved.pk, metrics=EDIT)],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert started.returncode == 0, started.stderr[-2000:]
    answer = json.loads(started.stdout.strip().splitlines()[-1])
    assert (answer["status"], answer["errors"]) == ("queued", {})
    assert "the broker did not answer" in started.stderr

    ScoreJob.objects.filter(pk=answer["id"]).update(created_at=LONG_AGO)
    assert score_jobs_recover()["resumed"] == [answer["id"]]
    assert ScoreJob.objects.get(pk=answer["id"]).status == "done"  # eager here: sent and run
