"""Every job kind survives a broker that does not answer the same way: the request that starts it
answers as usual, the job stays queued, and it is sent (and runs) once the broker answers again.
The broker here is a closed port; the real worker's recovery clock is tested in
test_jobs_outage_worker.py."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import OperationalError
from rest_framework.test import APIClient

from annotation.jobs import unsent_jobs_send
from annotation.models import CaptionImportJob, Clip, UnsentJob
from annotation.tasks import run_caption_import
from tests.annotation.studybuild import caption_record, fake_clip
from tests.outage import free_port, jobs_sent_to

pytestmark = pytest.mark.django_db


@pytest.fixture
def broker_down(settings):
    """Jobs go to a broker on a port nobody listens on (Redis stopped)."""
    return lambda: jobs_sent_to(f"redis://127.0.0.1:{free_port()}/0", settings)


@pytest.fixture
def committed(django_capture_on_commit_callbacks):
    return lambda: django_capture_on_commit_callbacks(execute=True)


def admin_client(personas) -> APIClient:
    client = APIClient()
    client.force_authenticate(personas["admin"])
    return client


def captions_file() -> SimpleUploadedFile:
    data = "\n".join(json.dumps(caption_record(name)) for name in ("a", "b")).encode()
    return SimpleUploadedFile("captions.jsonl", data)


def test_a_caption_import_started_while_the_broker_is_down_stays_queued_and_runs_once_it_is_back(
    personas, study, broker_down, committed
):
    for name in ("a", "b"):
        fake_clip(study, name)
    client = admin_client(personas)
    with broker_down(), committed():
        answer = client.post("/api/studies/s1/captions/import-jobs/", {"file": captions_file()},
                             format="multipart")
    assert answer.status_code == 202, answer.content
    job = CaptionImportJob.objects.get()
    assert (job.state, job.errors) == ("queued", [])  # it was failed for good before
    assert list(UnsentJob.objects.values_list("task", "args")) == [
        ("annotation.tasks.run_caption_import", [job.pk])]

    assert unsent_jobs_send() == [f"annotation.tasks.run_caption_import({job.pk},)"]  # eager: run here
    job.refresh_from_db()
    assert (job.state, job.report["stored"]) == ("done", 2)
    assert not UnsentJob.objects.exists()
    assert unsent_jobs_send() == []  # sent once


def test_a_kept_job_stays_kept_while_the_broker_still_does_not_answer(personas, study, broker_down, committed):
    fake_clip(study, "a")
    with broker_down(), committed():
        admin_client(personas).post("/api/studies/s1/captions/import-jobs/", {"file": captions_file()},
                                    format="multipart")
        assert unsent_jobs_send() == []
    assert UnsentJob.objects.count() == 1
    assert "Connection refused" in UnsentJob.objects.get().error or UnsentJob.objects.get().error
    assert CaptionImportJob.objects.get().state == "queued"


def test_a_clip_uploaded_while_the_broker_is_down_is_stored_and_its_poster_follows(
    personas, study, clip_files, broker_down, committed
):
    client = admin_client(personas)
    with broker_down(), committed():
        answer = client.post("/api/studies/s1/clips/upload/",
                             {"file": SimpleUploadedFile("a.mp4", clip_files["a"].read_bytes())},
                             format="multipart")
    assert answer.status_code == 201, answer.content
    clip = Clip.objects.get()
    assert clip.poster.name == ""
    assert list(UnsentJob.objects.values_list("task", "args")) == [
        ("annotation.tasks.prepare_clip_media", [clip.pk])]
    unsent_jobs_send()
    clip.refresh_from_db()
    assert clip.poster.name and clip.media_error == ""


def test_an_import_whose_task_gives_up_on_the_database_is_kept_queued_not_failed(personas, study):
    """The database restarting for longer than the task's retries is no fault of the file: the
    job is kept to run again (the soak's finding: one import failed for good this way)."""
    from annotation.services.caption_jobs import caption_import_job_create

    fake_clip(study, "a")
    job = caption_import_job_create(study=study, upload=captions_file(), file_name="c.jsonl", enqueue=False)
    error = OperationalError("terminating connection due to administrator command")
    run_caption_import.on_failure(error, job.task_id, (job.pk,), {}, None)
    job.refresh_from_db()
    assert (job.state, job.errors) == ("queued", [])
    kept = UnsentJob.objects.get()
    assert (kept.task, kept.args, kept.task_id) == ("annotation.tasks.run_caption_import", [job.pk], job.task_id)
    assert "administrator command" in kept.error


def test_an_import_whose_task_fails_for_another_reason_is_failed_naming_it(personas, study):
    from annotation.services.caption_jobs import caption_import_job_create

    job = caption_import_job_create(study=study, upload=captions_file(), file_name="c.jsonl", enqueue=False)
    run_caption_import.on_failure(ValueError("line 3 is not JSON"), job.task_id, (job.pk,), {}, None)
    job.refresh_from_db()
    assert job.state == "failed" and job.errors == ["ValueError: line 3 is not JSON"]
    assert not UnsentJob.objects.exists()


def test_the_same_file_posted_twice_in_a_row_is_one_import_and_another_file_is_another(
    personas, study, broker_down, committed
):
    fake_clip(study, "a")
    client = admin_client(personas)
    with broker_down(), committed():
        first = client.post("/api/studies/s1/captions/import-jobs/", {"file": captions_file()}, format="multipart")
        again = client.post("/api/studies/s1/captions/import-jobs/", {"file": captions_file()}, format="multipart")
        other = client.post("/api/studies/s1/captions/import-jobs/",
                            {"file": SimpleUploadedFile("other.jsonl", json.dumps(caption_record("a", "m9")).encode())},
                            format="multipart")
    assert first.status_code == again.status_code == other.status_code == 202
    assert again.json()["url"] == first.json()["url"] != other.json()["url"]
    assert CaptionImportJob.objects.count() == 2 and UnsentJob.objects.count() == 2


def test_a_job_started_while_redis_hangs_is_kept_within_seconds(personas, study, settings, tmp_path, committed):
    """A Redis that accepts connections but never answers (SIGSTOP): the request does not hang
    (without the socket timeout it waits for ever, and the suite's timeout fails the test)."""
    import os
    import signal
    import time

    from config.celery import app
    from tests.outage import RedisServer

    fake_clip(study, "a")
    server = RedisServer(tmp_path)
    server.start()
    os.kill(server.process.pid, signal.SIGSTOP)
    try:
        with jobs_sent_to(server.url, settings), committed():
            assert app.conf.broker_transport_options["socket_timeout"] == 3
            started = time.monotonic()
            answer = admin_client(personas).post("/api/studies/s1/captions/import-jobs/",
                                                 {"file": captions_file()}, format="multipart")
        took = time.monotonic() - started
    finally:
        os.kill(server.process.pid, signal.SIGCONT)
        server.stop()
    assert answer.status_code == 202, answer.content
    assert CaptionImportJob.objects.get().state == "queued" and UnsentJob.objects.count() == 1
    print(f"answered {took:.1f} s into a hung Redis")
