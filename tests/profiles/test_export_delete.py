"""Deleting a profile export from its page or its job URL: who may, which exports, what is left."""

import pytest
from django.urls import reverse

from annotation.models import AuditEvent
from scoring import profile_jobs
from tests.profiles.fake_exports import an_export

pytestmark = pytest.mark.django_db

SMALL = {"resamples": 30, "adjusted_resamples": 10, "seed": 1}


def signed_in(client, person):
    client.force_login(person)
    return client


def listed(study) -> list[str]:
    return [status["job"] for status in profile_jobs.profile_jobs(study=study)]


def delete(client, study, job, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        return client.delete(reverse("profile-job", args=[study.slug, job]))


@pytest.mark.parametrize("state", ["done", "failed"])
def test_deleting_an_ended_export_removes_its_folder_and_its_entry_and_is_audited(
    client, study, personas, state, django_capture_on_commit_callbacks
):
    kept = an_export(study, state="done", created_at="2026-01-01T00:00:00+00:00")
    job = an_export(study, state=state, created_at="2026-01-02T00:00:00+00:00")
    signed_in(client, personas["researcher"])
    response = delete(client, study, job, django_capture_on_commit_callbacks)
    assert response.status_code == 204
    assert listed(study) == [kept]
    assert sorted(p.name for p in profile_jobs.jobs_root(study).iterdir()) == [kept]  # no hidden leftover
    assert client.get(reverse("profile-job", args=[study.slug, job])).status_code == 404
    event = AuditEvent.objects.get(study=study, action="profile_export_delete")
    assert event.actor == personas["researcher"]
    assert event.before["export"] == job and event.before["state"] == state
    # Asked again: already gone.
    assert delete(client, study, job, django_capture_on_commit_callbacks).status_code == 404


@pytest.mark.parametrize("state", ["queued", "running"])
def test_an_export_still_queued_or_running_is_refused_with_409_and_kept(
    client, study, personas, state, django_capture_on_commit_callbacks
):
    job = an_export(study, state=state, created_at="2026-01-01T00:00:00+00:00")
    signed_in(client, personas["admin"])
    response = delete(client, study, job, django_capture_on_commit_callbacks)
    assert response.status_code == 409
    assert response.json()["detail"] == (
        f"This export is still {state}: it can be deleted once it has finished or failed.")
    assert listed(study) == [job]
    assert (profile_jobs.job_dir(study, job) / "status.json").is_file()
    assert not AuditEvent.objects.filter(action="profile_export_delete").exists()


@pytest.mark.parametrize("role", ["annotator", "reviewer", "outsider"])
def test_whoever_may_not_export_cannot_delete_an_export_either(
    client, study, personas, role, django_capture_on_commit_callbacks
):
    job = an_export(study, state="done", created_at="2026-01-01T00:00:00+00:00")
    signed_in(client, personas[role])
    assert delete(client, study, job, django_capture_on_commit_callbacks).status_code == 404
    assert listed(study) == [job]


def test_a_delete_without_the_csrf_token_is_refused(study, personas, django_capture_on_commit_callbacks):
    from django.test import Client

    job = an_export(study, state="done", created_at="2026-01-01T00:00:00+00:00")
    client = Client(enforce_csrf_checks=True)
    client.force_login(personas["researcher"])
    assert delete(client, study, job, django_capture_on_commit_callbacks).status_code == 403
    assert listed(study) == [job]


def test_a_delete_that_fails_to_be_recorded_leaves_the_export_in_place(study, personas, monkeypatch):
    job = an_export(study, state="done", created_at="2026-01-01T00:00:00+00:00")

    def refused(**kwargs):
        raise RuntimeError("the database went away")

    monkeypatch.setattr(profile_jobs, "study_audit", refused)
    with pytest.raises(RuntimeError):
        profile_jobs.profile_job_delete(study=study, job_id=job, actor=personas["researcher"])
    assert listed(study) == [job]
    assert (profile_jobs.job_dir(study, job) / "profile.zip").is_file()


def test_the_study_history_says_who_deleted_which_export(client, study, personas, django_capture_on_commit_callbacks):
    job = an_export(study, state="done", created_at="2026-01-01T00:00:00+00:00")
    signed_in(client, personas["researcher"])
    delete(client, study, job, django_capture_on_commit_callbacks)
    signed_in(client, personas["admin"])
    page = client.get(reverse("study-history", args=[study.slug])).content.decode()
    assert f"Deleted the done profile export {job[:8]}" in page


def test_files_a_delete_left_behind_are_hidden_and_media_check_removes_them(study, personas):
    """Here the transaction never commits, so the files are not removed: as after a removal
    that failed, the folder is out of the listing under a hidden name, which media_check cleans."""
    import io
    import os
    import time

    from django.core.management import call_command

    job = an_export(study, state="done", created_at="2026-01-01T00:00:00+00:00")
    assert profile_jobs.profile_job_delete(study=study, job_id=job, actor=personas["admin"])["job"] == job
    assert listed(study) == []
    [left] = list(profile_jobs.jobs_root(study).iterdir())
    assert left.name.startswith(f".{job}.deleted-")
    past = time.time() - 600
    for path in (left, *left.rglob("*")):
        os.utime(path, (past, past))
    out = io.StringIO()
    call_command("media_check", "--clean", stdout=out)
    assert f"profiles/{study.slug}/{left.name}" in out.getvalue()
    assert not left.exists()
