"""Two caption import jobs of one study at once, on PostgreSQL, each run on its own connection.

The first run is held halfway through storing (its progress hook waits), with its transaction
open. Meanwhile: its progress is readable through the API from a third connection, which sees
none of its captions yet; the second run waits for the study's lock instead of importing beside
it; rows that only refer to the study (a new job) are not held up; recovery leaves both running
jobs alone. Released, the first commits, and the second validates against what it stored.
"""

from __future__ import annotations

import json
import threading
import time

import pytest
from django.core.files.base import ContentFile
from django.db import connection
from rest_framework.test import APIClient

from annotation.models import Caption, CaptionImportJob
from annotation.services import captions as caption_services
from annotation.services.caption_jobs import (
    caption_import_job_create,
    caption_import_job_run,
    caption_import_jobs_recover,
    caption_import_progress,
)
from tests.annotation.studybuild import caption_record, fake_clip

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def lines(*records) -> bytes:
    return "\n".join(json.dumps(record) for record in records).encode()


def wait_for(condition, what: str, seconds: float = 30):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    pytest.fail(f"{what} did not happen in {seconds} s")


def waiting_on_a_lock() -> int:
    """How many other connections to this database wait for a lock now."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()"
        )
        return cursor.fetchone()[0]


def test_a_second_import_of_the_study_waits_for_the_first_and_sees_what_it_stored(
    study, personas, monkeypatch, settings
):
    monkeypatch.setattr(caption_services, "IMPORT_BATCH", 1)
    settings.SCORING_JOB_LEASE_SECONDS = 0  # every running job looks stalled to recovery
    for name in ("a", "b", "c"):
        fake_clip(study, name)
    first = caption_import_job_create(
        study=study, upload=ContentFile(lines(*(caption_record(c, "m1") for c in "abc"))),
        file_name="first.jsonl", enqueue=False)
    second = caption_import_job_create(
        study=study, upload=ContentFile(lines(caption_record("a", "m2"), caption_record("b", "m1"))),
        file_name="second.jsonl", enqueue=False)
    halfway, release = threading.Event(), threading.Event()
    outcomes: dict[str, object] = {}

    def hold_halfway(entry):
        if entry["phase"] == "storing" and entry["stored"] == 1:
            halfway.set()
            release.wait(timeout=60)

    def run(name, job, hook=None):
        try:
            outcomes[name] = caption_import_job_run(job_id=job.pk, task_id=job.task_id, on_progress=hook)
        except Exception as exc:  # noqa: BLE001 - reported by the assertions
            outcomes[name] = exc
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=("first", first, hold_halfway))]
    threads[0].start()
    try:
        assert halfway.wait(timeout=60), "the first import did not start storing"
        threads.append(threading.Thread(target=run, args=("second", second)))
        threads[1].start()
        wait_for(lambda: waiting_on_a_lock() >= 1, "the second import waiting for the study")
        assert caption_import_progress(job_id=second.pk)["phase"] == "waiting"

        admin = APIClient()
        admin.force_authenticate(personas["admin"])
        running = admin.get(f"/api/studies/s1/captions/import-jobs/{first.pk}/").json()
        assert (running["state"], running["stored"], running["total"]) == ("running", 1, 3)
        assert running["detail"] == "1 of 3 captions stored."
        assert Caption.objects.count() == 0  # the first import's transaction is still open

        third = caption_import_job_create(study=study, upload=ContentFile(b"{}"), file_name="third.jsonl",
                                          enqueue=False)
        assert third.state == "queued"  # created at once: referring to the study is not held up
        # The two running imports hold their rows: recovery takes neither. (The third, queued
        # and never sent here, is older than the zero lease: recovery sends it, as it should.)
        assert caption_import_jobs_recover() == {"resumed": [third.pk], "failed": []}
    finally:
        release.set()
        for thread in threads:
            thread.join(timeout=60)
    assert outcomes == {"first": "done", "second": "refused"}
    assert Caption.objects.count() == 3
    refused = CaptionImportJob.objects.get(pk=second.pk)
    assert refused.errors == ['line 2, clip x model: clip "b" with model "m1" is already imported']
