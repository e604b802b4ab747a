"""Caption imports as background jobs: the API, the run, its progress in the cache, recovery.

Jobs run through Celery, eagerly (tests/conftest.py): a job posted inside ``with committed():``
has run by the time the block ends.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import timedelta

import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import timezone
from rest_framework.test import APIClient

from annotation.models import Caption, CaptionImportJob
from annotation.services import captions as caption_services
from annotation.services.caption_jobs import (
    caption_import_job_create,
    caption_import_job_run,
    caption_import_jobs_recover,
    caption_import_progress,
)
from annotation.tasks import run_caption_import
from tests.annotation.studybuild import caption_record, fake_clip
from tests.conftest import REPO

pytestmark = pytest.mark.django_db

JOBS = "/api/studies/s1/captions/import-jobs/"


@pytest.fixture
def clips(study):
    return {name: fake_clip(study, name) for name in ("a", "b", "c")}


@pytest.fixture
def committed(django_capture_on_commit_callbacks):
    """``with committed():`` runs, when the block ends, what its commits sent (jobs, eagerly)."""
    return lambda: django_capture_on_commit_callbacks(execute=True)


def client_for(user):
    client = APIClient()
    client.force_authenticate(user)
    return client


def lines(*records) -> bytes:
    return "\n".join(json.dumps(record) for record in records).encode()


def post(client, data: bytes, name: str = "captions.jsonl", query: str = ""):
    return client.post(f"{JOBS}{query}", {"file": SimpleUploadedFile(name, data)}, format="multipart")


def three_captions(model: str = "m1") -> bytes:
    return lines(*(caption_record(clip, model) for clip in ("a", "b", "c")))


def test_an_admin_posts_a_file_and_gets_the_jobs_url_to_follow(personas, clips, committed):
    client = client_for(personas["admin"])
    with committed():
        answer = post(client, three_captions())
    assert answer.status_code == 202, answer.content
    job = CaptionImportJob.objects.get()
    url = f"{JOBS}{job.pk}/"
    assert answer.json()["url"] == url and answer["Location"] == url
    assert answer.json()["state"] == "queued"  # read before the commit sent it
    followed = client.get(url).json()
    assert followed["state"] == "done"
    assert followed["stored"] == followed["total"] == 3
    assert followed["report"] == {"stored": 3, "kept_invalid": 0, "models_created": ["m1"], "errors": []}
    assert followed["detail"] == "Stored 3 caption(s)."
    assert followed["requested_by"] == "admin" and followed["file_name"] == "captions.jsonl"
    assert Caption.objects.filter(clip__study__slug="s1").count() == 3


def test_the_uploaded_file_is_kept_in_the_media_storage_until_the_job_ends(personas, clips, study):
    job = caption_import_job_create(
        study=study, upload=ContentFile(three_captions()), file_name="c.jsonl", enqueue=False
    )
    name = job.upload.name
    assert name.startswith("imports/captions/s1/") and default_storage.exists(name)
    assert caption_import_job_run(job_id=job.pk) == "done"
    assert not default_storage.exists(name)
    assert CaptionImportJob.objects.get(pk=job.pk).upload.name == ""


def test_a_refused_file_stores_nothing_and_the_job_names_every_error(personas, clips, committed):
    bad = {**caption_record("nope"), "overview": "<img src=x onerror=alert(1)>"}
    late = caption_record("b")
    late["windows"][2]["end"] = 60
    client = client_for(personas["admin"])
    with committed():
        answer = post(client, lines(caption_record("a"), bad, late))
    job = client.get(answer.json()["url"]).json()
    assert job["state"] == "refused"
    assert job["detail"] == "2 error(s); nothing was stored."
    assert job["errors"][0] == 'line 2, clip: unknown clip "nope" (not among the 3 clips imported)'
    assert job["errors"][1].startswith("line 3, windows[2].end:")
    assert job["report"] is None and job["stored"] == 0
    assert Caption.objects.count() == 0
    assert CaptionImportJob.objects.get().upload.name == ""  # removed when the job ended


def test_keep_invalid_stores_schema_invalid_captions_and_reports_them(personas, clips, committed):
    missing_overview = {key: value for key, value in caption_record("c").items() if key != "overview"}
    client = client_for(personas["admin"])
    with committed():
        answer = post(client, lines(caption_record("a"), missing_overview), query="?keep_invalid=1")
    report = client.get(answer.json()["url"]).json()["report"]
    assert report["stored"] == 2 and report["kept_invalid"] == 1
    assert report["errors"] and report["errors"][0].startswith("line 2, overview")
    assert Caption.objects.filter(invalid_kept=True).count() == 1


def test_a_clip_cc_file_becomes_captions_of_the_model_named_by_the_file(personas, clips, committed):
    client = client_for(personas["admin"])
    paragraphs = json.dumps({"a": "A test card.", "b": "Colour bars."}).encode()
    with committed():
        answer = post(client, paragraphs, name="longva.json", query="?format=clip-cc")
    job = client.get(answer.json()["url"]).json()
    assert (job["state"], job["format"], job["model"]) == ("done", "clip-cc", "longva")
    assert job["report"]["models_created"] == ["longva"]
    assert set(Caption.objects.values_list("model__name", flat=True)) == {"longva"}


def test_an_unknown_format_or_a_missing_or_empty_file_is_refused_at_once(personas, clips):
    client = client_for(personas["admin"])
    unknown = post(client, three_captions(), query="?format=srt")
    assert unknown.status_code == 400 and "Unknown caption format 'srt'" in unknown.json()["detail"]
    empty = post(client, b"")
    assert empty.status_code == 400 and "the file is empty" in empty.json()["detail"]
    missing = client.post(JOBS, {}, format="multipart")
    assert missing.status_code == 400 and "file" in missing.json()["detail"]
    assert CaptionImportJob.objects.count() == 0


@pytest.mark.parametrize("role", ["annotator", "reviewer", "researcher", "outsider"])
def test_only_study_admins_start_or_see_import_jobs(personas, clips, study, role):
    job = caption_import_job_create(
        study=study, upload=ContentFile(three_captions()), file_name="c.jsonl", enqueue=False
    )
    client = client_for(personas[role])
    assert post(client, three_captions()).status_code in (403, 404)
    assert client.get(JOBS).status_code in (403, 404)
    assert client.get(f"{JOBS}{job.pk}/").status_code in (403, 404)
    assert CaptionImportJob.objects.count() == 1 and Caption.objects.count() == 0


def test_the_list_shows_the_studys_jobs_newest_first(personas, clips, study, other_study):
    for name in ("first.jsonl", "second.jsonl"):
        caption_import_job_create(study=study, upload=ContentFile(b"{}"), file_name=name, enqueue=False)
    caption_import_job_create(study=other_study, upload=ContentFile(b"{}"), file_name="x.jsonl",
                              enqueue=False)
    page = client_for(personas["admin"]).get(JOBS).json()
    assert [job["file_name"] for job in page["results"]] == ["second.jsonl", "first.jsonl"]


def test_running_the_task_again_changes_nothing(personas, clips, study):
    job = caption_import_job_create(
        study=study, upload=ContentFile(three_captions()), file_name="c.jsonl", enqueue=False
    )
    assert run_caption_import.apply(args=[job.pk], task_id=job.task_id).get() == "done"
    before = CaptionImportJob.objects.values().get(pk=job.pk)
    assert run_caption_import.apply(args=[job.pk], task_id=job.task_id).get() == "finished"
    assert CaptionImportJob.objects.values().get(pk=job.pk) == before
    assert Caption.objects.count() == 3


def test_two_imports_of_one_study_run_one_after_the_other_and_the_second_sees_the_first(
    personas, clips, committed
):
    """Both are accepted (202); the second validates against what the first stored, so a
    caption both files hold is refused by line instead of failing in the database."""
    client = client_for(personas["admin"])
    with committed():
        first = post(client, three_captions(), name="first.jsonl")
        second = post(client, lines(caption_record("a", "m2"), caption_record("b", "m1")),
                      name="second.jsonl")
    assert first.status_code == second.status_code == 202
    assert client.get(first.json()["url"]).json()["state"] == "done"
    refused = client.get(second.json()["url"]).json()
    assert refused["state"] == "refused"
    assert refused["errors"] == ['line 2, clip x model: clip "b" with model "m1" is already imported']
    assert Caption.objects.count() == 3


def test_progress_is_written_per_stored_batch_and_read_from_another_process_mid_import(
    personas, clips, study, monkeypatch, var_dir
):
    """The import's rows are invisible until it commits; its progress is in the cache, which
    another process (a web server beside the worker) reads while the import still runs."""
    monkeypatch.setattr(caption_services, "IMPORT_BATCH", 1)
    job = caption_import_job_create(
        study=study, upload=ContentFile(three_captions()), file_name="c.jsonl", enqueue=False
    )
    admin = client_for(personas["admin"])
    seen: list[dict] = []
    midway: dict = {}

    def look(entry):
        seen.append(entry)
        if entry["phase"] == "storing" and entry["stored"] == 2:
            midway["other process"] = progress_in_another_process(job.pk, var_dir)
            midway["api"] = admin.get(f"{JOBS}{job.pk}/").json()

    assert caption_import_job_run(job_id=job.pk, on_progress=look) == "done"
    assert [entry["phase"] for entry in seen] == ["waiting", "validating", "storing", "storing", "storing"]
    assert [(e["stored"], e["total"]) for e in seen[2:]] == [(1, 3), (2, 3), (3, 3)]
    assert midway["other process"] == {"phase": "storing", "stored": 2, "total": 3}
    assert midway["api"]["state"] == "running"
    assert (midway["api"]["stored"], midway["api"]["total"]) == (2, 3)
    assert midway["api"]["detail"] == "2 of 3 captions stored."
    assert caption_import_progress(job_id=job.pk) is None  # the end removes the entry


def progress_in_another_process(job_id: int, var_dir) -> dict:
    """Read a job's progress from a fresh Python process with the default (file) cache."""
    code = ("import json, django; django.setup(); "
            "from annotation.services.caption_jobs import caption_import_progress; "
            f"print(json.dumps(caption_import_progress(job_id={job_id})))")
    env = {key: value for key, value in os.environ.items() if key != "CACHE_URL"}
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True,
        env={**env, "DJANGO_SETTINGS_MODULE": "config.settings", "REDLINE_VAR_DIR": str(var_dir)},
    )
    return json.loads(result.stdout)


def test_a_job_whose_file_is_gone_fails_saying_so(personas, clips, study):
    job = caption_import_job_create(
        study=study, upload=ContentFile(three_captions()), file_name="c.jsonl", enqueue=False
    )
    default_storage.delete(job.upload.name)
    assert caption_import_job_run(job_id=job.pk) == "failed"
    job.refresh_from_db()
    assert job.state == "failed" and "no longer in the media storage" in job.errors[0]
    assert Caption.objects.count() == 0


def test_a_job_whose_process_died_is_sent_again_then_failed_after_too_many_tries(
    personas, clips, study, settings
):
    settings.JOB_MAX_ATTEMPTS = 2
    long_ago = timezone.now() - timedelta(seconds=settings.SCORING_JOB_LEASE_SECONDS + 60)
    job = caption_import_job_create(
        study=study, upload=ContentFile(three_captions()), file_name="c.jsonl", enqueue=False
    )
    CaptionImportJob.objects.filter(pk=job.pk).update(state="running", attempts=1, started_at=long_ago)
    assert caption_import_jobs_recover() == {"resumed": [job.pk], "failed": []}
    assert caption_import_jobs_recover() == {"resumed": [], "failed": []}  # renewed: not twice
    # The resent task runs under the job's task id (its on_commit does not fire in this test).
    assert caption_import_job_run(job_id=job.pk, task_id=job.task_id) == "done"

    dead = caption_import_job_create(
        study=study, upload=ContentFile(b"{}"), file_name="d.jsonl", enqueue=False
    )
    CaptionImportJob.objects.filter(pk=dead.pk).update(state="running", attempts=2, started_at=long_ago)
    assert caption_import_jobs_recover() == {"resumed": [], "failed": [dead.pk]}
    dead.refresh_from_db()
    assert dead.state == "failed" and "stopped without finishing it (2 times" in dead.errors[0]


@pytest.mark.parametrize("runner", ["threads", "celery"])
def test_a_queued_job_whose_message_was_lost_is_sent_again_once_a_lease(
    personas, clips, study, settings, runner
):
    # Lost with its job thread, or with a Redis restarted without its data (the soak does that).
    settings.JOB_RUNNER = runner
    long_ago = timezone.now() - timedelta(seconds=settings.SCORING_JOB_LEASE_SECONDS + 60)
    job = caption_import_job_create(
        study=study, upload=ContentFile(three_captions()), file_name="c.jsonl", enqueue=False
    )
    CaptionImportJob.objects.filter(pk=job.pk).update(created_at=long_ago)
    assert caption_import_jobs_recover() == {"resumed": [job.pk], "failed": []}
    assert caption_import_jobs_recover() == {"resumed": [], "failed": []}  # renewed: not twice
    assert caption_import_job_run(job_id=job.pk, task_id=job.task_id) == "done"


def test_a_running_job_is_not_claimed_by_a_second_run_without_its_task_id(personas, clips, study):
    job = caption_import_job_create(
        study=study, upload=ContentFile(three_captions()), file_name="c.jsonl", enqueue=False
    )
    CaptionImportJob.objects.filter(pk=job.pk).update(state="running")
    assert caption_import_job_run(job_id=job.pk) == "busy"
    assert caption_import_job_run(job_id=job.pk + 1000) == "missing"


def test_a_done_import_posted_again_is_that_import_not_a_second_job_refused(personas, clips, committed, settings):
    """The soak's finding: the web process was killed after storing the job and before answering;
    the client's retry (late: the server took a while to come back) made a second job, refused
    as "already imported". The same bytes from the same person are the import already done."""
    settings.JOB_REPEAT_SECONDS = 0  # the retry comes after a repeated click's window
    client = client_for(personas["admin"])
    with committed():
        first = post(client, three_captions())
    assert client.get(first.json()["url"]).json()["state"] == "done"
    with committed():
        again = post(client, three_captions(), name="renamed.jsonl")
    assert again.status_code == 202
    assert again.json()["url"] == first.json()["url"] and again.json()["state"] == "done"
    assert CaptionImportJob.objects.count() == 1 and Caption.objects.count() == 3


def test_a_refused_import_posted_again_is_a_new_job(personas, clips, committed):
    """What stopped a refused import may have been fixed since (a clip added): the same file
    posted again is tried again."""
    client = client_for(personas["admin"])
    unknown = lines(caption_record("a"), caption_record("zz"))
    with committed():
        first = post(client, unknown)
    assert client.get(first.json()["url"]).json()["state"] == "refused"
    with committed():
        again = post(client, unknown)
    assert again.json()["url"] != first.json()["url"]
    assert CaptionImportJob.objects.count() == 2
