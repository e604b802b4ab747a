"""Recovery sends a job again only when its message is really gone, against a Redis of the test's
own: a queued job whose message merely waits its turn (in the queue, or taken by a worker a
moment ago) gets no second message however many rounds pass; after the broker lost it, exactly
one. The soak's 30-minute run had 2,363 messages for 174 unfinished jobs when recovery went by
time alone: every lease, each waiting job (and each queued chunk of a running study job) got one
more, and two workers chewed duplicates while the jobs waited."""

from __future__ import annotations

import time

import pytest
import redis
from django.core.files.base import ContentFile
from django.utils import timezone
from kombu import Connection

from annotation.jobs import broker_look
from annotation.services.caption_jobs import caption_import_job_create, caption_import_jobs_recover
from scoring import profile_jobs
from scoring.chunks import study_job_run
from scoring.models import ScoreChunk, ScoreJob
from scoring.services import score_job_create, score_job_run, score_jobs_recover
from tests.outage import RedisServer, jobs_sent_to
from tests.scoring_jobs.test_fanout import table_study  # noqa: F401 - a fixture
from tests.scoring_jobs.test_runner_and_recovery import EDIT, LONG_AGO, stalled_job

pytestmark = pytest.mark.django_db
ROUNDS = 5


@pytest.fixture
def broker(tmp_path, settings):
    server = RedisServer(tmp_path)
    server.start()
    settings.CELERY_BROKER_URL = server.url
    client = redis.Redis.from_url(server.url)
    # Not eager from here on, and only here: jobs_sent_to keeps Celery's own setting as it found
    # it, so it must find the suite's (eager) one for the tests after this one.
    with jobs_sent_to(server.url, settings):
        settings.CELERY_TASK_ALWAYS_EAGER = False
        yield client
    client.close()
    server.stop()


def lease_passes(job: ScoreJob) -> None:
    """As if a lease had passed since the job was created and last sent."""
    ScoreJob.objects.filter(pk=job.pk).update(created_at=LONG_AGO, heartbeat_at=None)


def test_a_queued_job_waiting_in_the_queue_gets_no_second_message_and_one_after_a_flush(
    approved, fast_scoring, broker, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        job = score_job_create(study=approved.caption.clip.study, kind="verdict", annotation=approved,
                               metrics=EDIT)
    assert broker.llen("redline") == 1
    for _ in range(ROUNDS):
        lease_passes(job)
        assert score_jobs_recover() == {"resumed": [], "failed": []}
    assert broker.llen("redline") == 1

    broker.flushall()  # the broker lost it (a restart without its data)
    lease_passes(job)
    assert score_jobs_recover() == {"resumed": [job.pk], "failed": []}
    assert broker.llen("redline") == 1
    for _ in range(ROUNDS):
        lease_passes(job)
        assert score_jobs_recover() == {"resumed": [], "failed": []}
    assert broker.llen("redline") == 1


def test_a_message_a_worker_took_counts_until_a_lease_has_passed(
    approved, fast_scoring, broker, settings, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        job = score_job_create(study=approved.caption.clip.study, kind="verdict", annotation=approved,
                               metrics=EDIT)
    with Connection(settings.CELERY_BROKER_URL) as connection:
        queue = connection.SimpleQueue("redline")
        taken = queue.get(timeout=5)  # a worker took it and has not acknowledged it
        assert (broker.llen("redline"), broker.hlen("unacked")) == (0, 1)
        lease_passes(job)
        assert score_jobs_recover() == {"resumed": [], "failed": []}
        assert broker.llen("redline") == 0

        # Taken longer than a lease ago and the job still queued: that worker is presumed dead.
        (tag,) = broker.hkeys("unacked")
        broker.zadd("unacked_index", {tag: time.time() - settings.SCORING_JOB_LEASE_SECONDS - 5})
        assert score_jobs_recover() == {"resumed": [job.pk], "failed": []}
        assert broker.llen("redline") == 1
        taken.ack()
        queue.close()


def test_the_queued_chunks_of_a_running_study_job_are_sent_once(
    table_study, broker, settings  # noqa: F811 - the fixture
):
    settings.SCORING_STUDY_CHUNK_ITEMS = {"default": 4}
    job = score_job_create(study=table_study, kind="study", metrics=EDIT, enqueue=False)
    assert study_job_run(job_id=job.pk, task_id=job.task_id) == "ran"
    chunks = ScoreChunk.objects.filter(job=job).count()
    assert chunks > 1
    assert broker.llen("redline") == chunks
    for _ in range(ROUNDS):  # recovery's message of the running job, once a lease
        assert study_job_run(job_id=job.pk) == "busy"
    assert broker.llen("redline") == chunks

    broker.flushall()
    assert study_job_run(job_id=job.pk) == "resent"
    assert broker.llen("redline") == chunks
    assert study_job_run(job_id=job.pk) == "busy"
    assert broker.llen("redline") == chunks


def test_a_waiting_caption_import_and_export_get_no_second_message(
    study, broker, settings, django_capture_on_commit_callbacks
):
    settings.SCORING_JOB_LEASE_SECONDS = 0
    settings.PROFILE_JOB_LEASE_SECONDS = 0
    with django_capture_on_commit_callbacks(execute=True):
        job = caption_import_job_create(study=study, upload=ContentFile(b'{"clip": "a"}'), file_name="c.jsonl")
        export = profile_jobs.profile_job_create(study=study, requested_by="admin", resamples=20,
                                             adjusted_resamples=20, seed=0)["job"]
    assert broker.llen("redline") == 2
    for _ in range(ROUNDS):
        with django_capture_on_commit_callbacks(execute=True):
            assert caption_import_jobs_recover() == {"resumed": [], "failed": []}
        assert profile_jobs.profile_jobs_recover(study=study) == {"resumed": [], "failed": []}
    assert broker.llen("redline") == 2

    broker.flushall()
    with django_capture_on_commit_callbacks(execute=True):
        assert caption_import_jobs_recover() == {"resumed": [job.pk], "failed": []}
    assert profile_jobs.profile_jobs_recover(study=study) == {"resumed": [export], "failed": []}
    assert broker.llen("redline") == 2


def test_a_broker_that_does_not_answer_holds_everything(approved, fast_scoring, settings, closed_port):
    settings.JOB_RUNNER = "celery"
    settings.CELERY_TASK_ALWAYS_EAGER = False
    settings.CELERY_BROKER_URL = f"redis://127.0.0.1:{closed_port}/0"
    look = broker_look()
    assert look is not None and not look.answered
    job = stalled_job(approved, attempts=0, status="queued")
    assert score_jobs_recover() == {"resumed": [], "failed": []}  # nothing could be sent anyway
    assert ScoreJob.objects.get(pk=job.pk).status == "queued"


def test_a_late_duplicate_cannot_take_a_job_from_the_run_that_holds_it(approved, fast_scoring, monkeypatch):
    job = stalled_job(approved, attempts=0, status="queued")
    first = job.task_id
    sent = []
    monkeypatch.setattr("annotation.jobs.job_send", lambda task, **kw: sent.append(kw))
    assert score_jobs_recover() == {"resumed": [job.pk], "failed": []}  # as if its message was lost
    resent = ScoreJob.objects.get(pk=job.pk).task_id
    assert resent != first and [kw["task_id"] for kw in sent] == [resent]
    # The first message was only slow: it claims the job, which keeps that message's id...
    assert score_job_run(job_id=job.pk, task_id=first) == "ran"
    assert ScoreJob.objects.get(pk=job.pk).task_id == first
    # ...so while a run holds it, the second message finds it busy; the first's own
    # redelivery (a retry, its worker dead) may still take it back.
    ScoreJob.objects.filter(pk=job.pk).update(status="running", finished_at=None, heartbeat_at=timezone.now())
    assert score_job_run(job_id=job.pk, task_id=resent) == "busy"
    assert score_job_run(job_id=job.pk, task_id=first) == "ran"


def test_exports_go_to_their_own_queue_and_waiting_there_count(
    study, broker, settings, django_capture_on_commit_callbacks
):
    settings.PROFILE_QUEUE = "exports"
    settings.PROFILE_JOB_LEASE_SECONDS = 0
    with django_capture_on_commit_callbacks(execute=True):
        export = profile_jobs.profile_job_create(study=study, requested_by="admin", resamples=20,
                                             adjusted_resamples=20, seed=0)["job"]
    assert (broker.llen("exports"), broker.llen("redline")) == (1, 0)
    assert profile_jobs.profile_jobs_recover(study=study) == {"resumed": [], "failed": []}
    broker.flushall()
    assert profile_jobs.profile_jobs_recover(study=study) == {"resumed": [export], "failed": []}
    assert (broker.llen("exports"), broker.llen("redline")) == (1, 0)
