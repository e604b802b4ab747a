"""Scoring jobs on a real Celery worker fed through Redis, and a worker killed mid-job."""

from __future__ import annotations

import io
import signal
import time

import pytest
from django.core.management import call_command
from django.db.models import Count

from scoring.metrics.registry import METRICS
from scoring.models import ScoreJob, ScoreResult
from scoring.services import score_job_create
from tests.scoring_jobs.conftest import import_captions, import_references, make_clip

pytestmark = [pytest.mark.worker, pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

WORKER = "tests.scoring_jobs.worker_main"  # Redline's worker with the slow test metric


@pytest.fixture
def slow_metric():
    """The slow test metric, registered in this process too (job creation checks names)."""
    from tests.scoring_jobs import slow_family

    slow_family.register()
    yield slow_family.METRIC
    METRICS.pop(slow_family.METRIC, None)


def wait_for(condition, *, worker, seconds: float, what: str):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        assert worker.poll() is None, f"the worker died while waiting for {what}"
        time.sleep(0.1)
    pytest.fail(f"{what} did not happen in {seconds} s")


def test_a_real_worker_runs_a_study_job_while_score_waits_and_prints_progress(
    start_worker, assigned, personas, settings
):
    from tests.scoring_jobs.conftest import finish_verdict

    settings.SCORING_ON_FINAL_VERDICT = False  # else the verdict's job scores these items first
    finish_verdict(assigned, personas)
    worker = start_worker(WORKER)
    out = io.StringIO()
    call_command(
        "score",
        "--study",
        "s1",
        "--metrics",
        "words_changed,char_similarity",
        "--wait",
        "--poll",
        "0.2",
        stdout=out,
    )
    text = out.getvalue()
    assert "Scoring job #" in text and "running in this process" not in text
    assert "done: 5/5 (100%)" in text
    assert text.rstrip().endswith("done: 10 result(s) stored.")
    assert worker.poll() is None


def test_a_verdict_approved_on_the_web_is_scored_by_the_worker(
    start_worker, assigned, personas, fast_scoring
):
    from tests.scoring_jobs.conftest import finish_verdict

    worker = start_worker(WORKER)
    approved = finish_verdict(assigned, personas)  # each service commits; the approval queues
    job = wait_for(
        lambda: ScoreJob.objects.filter(annotation=approved, status="done").first(),
        worker=worker,
        seconds=90,
        what="the verdict's scoring",
    )
    # The metrics were chosen when the job was created, by this process's settings.
    assert job.metrics == fast_scoring.SCORING_VERDICT_METRICS
    assert ScoreResult.objects.filter(annotation=approved).count() == 15


CAPTIONS = 40


@pytest.fixture
def long_study(study):
    """40 captions, each with one reference: 40 slow items, about 10 s of work."""
    for number in range(CAPTIONS):
        make_clip(study, f"c{number:02d}")
    import_captions(
        study,
        [
            {
                "clip": f"c{n:02d}",
                "model": "m1",
                "overview": f"Caption number {n} " + "word " * n,
                "windows": [{"start": 0, "end": 6, "scene": "A scene.", "shot": "A shot."}],
            }
            for n in range(CAPTIONS)
        ],
    )
    import_references(
        study, [{"clip": f"c{n:02d}", "text": f"Reference {n}."} for n in range(CAPTIONS)]
    )
    return study


def test_a_job_whose_worker_is_killed_completes_after_a_restart_without_duplicate_rows(
    start_worker, long_study, slow_metric
):
    # A short visibility timeout makes Redis hand the unacknowledged chunk to the next worker
    # soon; chunks of 4 items (a second each) commit (and count) as they are scored.
    env = {"CELERY_VISIBILITY_TIMEOUT": "2", "SCORING_STUDY_CHUNK_ITEMS": "test-slow=4"}
    first = start_worker(WORKER, **env)
    job = score_job_create(study=long_study, metrics=[slow_metric])  # commits: sent to Redis

    def progressed():
        job.refresh_from_db()
        # ... and in the middle of a chunk, which takes a second: killed mid-chunk.
        return (job.status == "running" and job.progress_done >= 8
                and job.chunks.filter(status="running").exists())

    wait_for(progressed, worker=first, seconds=90, what="progress on the job")
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=30)
    killed_in = list(job.chunks.filter(status="running").values_list("pk", flat=True))
    assert len(killed_in) == 1
    job.refresh_from_db()
    stored_before = dict(ScoreResult.objects.values_list("item_key", "pk"))
    assert job.status == "running" and 8 <= job.progress_done < CAPTIONS
    assert 8 <= len(stored_before) < CAPTIONS

    time.sleep(3)  # past the visibility timeout: the restarted worker gets the job again
    second = start_worker(WORKER, **env)

    def finished():
        job.refresh_from_db()
        return job.finished

    wait_for(finished, worker=second, seconds=120, what="the job's completion after the restart")
    assert (job.status, job.progress_done, job.progress_total, job.errors) == (
        "done",
        CAPTIONS,
        CAPTIONS,
        {},
    )
    assert job.attempts == 1  # planned once; the chunk killed mid-way was delivered again:
    assert list(job.chunks.filter(attempts__gt=1).values_list("pk", "attempts", "status")) == [
        (killed_in[0], 2, "done")]
    results = ScoreResult.objects.filter(metric=slow_metric)
    assert results.count() == CAPTIONS
    # The same numbers as an undisturbed run: each candidate's length.
    for row in results.select_related("caption"):
        assert row.value == len(row.caption.overview)
    duplicates = (
        results.values("item_key", "metric", "judge_or_backend", "metric_version")
        .annotate(n=Count("pk"))
        .filter(n__gt=1)
    )
    assert not duplicates.exists()
    # Items stored before the kill were kept, not scored again.
    after = dict(results.values_list("item_key", "pk"))
    assert all(after[key] == pk for key, pk in stored_before.items())
