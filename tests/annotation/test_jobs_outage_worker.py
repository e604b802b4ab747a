"""Recovery on a clock, with a real worker and a Redis of the test's own: a caption import posted
while Redis is stopped stays queued, and runs within a minute of Redis starting again, with no
page opened and no command run (the soak's finding: queued jobs waited for a trigger)."""

from __future__ import annotations

import json
import time

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from annotation.models import CaptionImportJob, UnsentJob
from tests.annotation.studybuild import caption_record, fake_clip
from tests.outage import RedisServer, jobs_sent_to

pytestmark = [pytest.mark.worker, pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def wait_for(condition, *, seconds: float, what: str, worker) -> float:
    """Wait until ``condition()``; return how long it took."""
    started = time.monotonic()
    while time.monotonic() - started < seconds:
        if condition():
            return time.monotonic() - started
        assert worker.poll() is None, f"the worker died while waiting for {what}"
        time.sleep(0.2)
    pytest.fail(f"{what} did not happen in {seconds} s")


def test_a_job_posted_while_redis_is_stopped_runs_within_a_minute_of_its_return(
    start_worker, study, personas, settings, var_dir, tmp_path
):
    import redis

    for name in ("a", "b"):
        fake_clip(study, name)
    broker = RedisServer(tmp_path)
    broker.start()
    try:
        worker = start_worker(CELERY_BROKER_URL=broker.url, REDLINE_VAR_DIR=str(var_dir))
        client = redis.Redis.from_url(broker.url)
        wait_for(lambda: client.exists("_kombu.binding.redline"), seconds=60, what="the worker consuming",
                 worker=worker)
        broker.stop()

        admin = APIClient()
        admin.force_authenticate(personas["admin"])
        data = "\n".join(json.dumps(caption_record(name)) for name in ("a", "b")).encode()
        with jobs_sent_to(broker.url, settings):
            answer = admin.post("/api/studies/s1/captions/import-jobs/",
                                {"file": SimpleUploadedFile("captions.jsonl", data)}, format="multipart")
        assert answer.status_code == 202, answer.content
        job = CaptionImportJob.objects.get()
        assert job.state == "queued" and UnsentJob.objects.count() == 1

        broker.start()  # Redis is back, empty; nobody opens a page or runs a command
        took = wait_for(lambda: CaptionImportJob.objects.get().state != "queued"
                        and CaptionImportJob.objects.get().state != "running",
                        seconds=60, what="the import running after Redis returned", worker=worker)
        job.refresh_from_db()
        assert (job.state, job.report.get("stored")) == ("done", 2), job.errors
        assert not UnsentJob.objects.exists()
        print(f"the import ended {took:.1f} s after Redis answered again")
    finally:
        broker.stop()
