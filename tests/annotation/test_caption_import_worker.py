"""A real Celery worker, fed through Redis, imports a caption file posted to the API while the
web side (this process) follows its progress through the cache they share: files under var/cache,
the demo's configuration without Redis for the cache."""

import json
import time

import pytest
from django.core.files.storage import default_storage
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from annotation.models import Caption, CaptionImportJob
from tests.annotation.studybuild import caption_record, fake_clip

pytestmark = [pytest.mark.worker, pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

WORKER = "tests.annotation.import_worker_main"  # waits halfway through storing, see there


def follow(client, url: str, condition, *, worker, what: str, seconds: float = 90) -> dict:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        job = client.get(url).json()
        if condition(job):
            return job
        assert worker.poll() is None, f"the worker died while waiting for {what}"
        time.sleep(0.1)
    pytest.fail(f"{what} did not happen in {seconds} s")


def test_the_web_reads_a_workers_import_progress_while_its_transaction_is_open(
    start_worker, study, personas, var_dir, tmp_path
):
    for name in ("a", "b", "c"):
        fake_clip(study, name)
    gate = tmp_path / "gate"
    worker = start_worker(WORKER, REDLINE_VAR_DIR=str(var_dir), IMPORT_GATE=str(gate))
    admin = APIClient()
    admin.force_authenticate(personas["admin"])
    data = "\n".join(json.dumps(caption_record(name)) for name in ("a", "b", "c")).encode()
    answer = admin.post("/api/studies/s1/captions/import-jobs/",
                        {"file": SimpleUploadedFile("captions.jsonl", data)}, format="multipart")
    assert answer.status_code == 202, answer.content
    url = answer.json()["url"]

    midway = follow(admin, url, lambda job: job["phase"] == "storing", worker=worker,
                    what="the worker storing the first batch")
    assert (midway["state"], midway["stored"], midway["total"]) == ("running", 1, 3)
    assert midway["detail"] == "1 of 3 captions stored."
    assert Caption.objects.count() == 0  # the worker's import has not committed yet

    gate.touch()
    done = follow(admin, url, lambda job: job["state"] != "running", worker=worker,
                  what="the import finishing")
    assert done["state"] == "done", done
    assert (done["stored"], done["total"], done["report"]["stored"]) == (3, 3, 3)
    assert Caption.objects.filter(clip__study=study).count() == 3
    assert CaptionImportJob.objects.get().upload.name == ""
    assert default_storage.listdir("imports/captions/s1") == ([], [])
