"""A profile export started while the broker does not answer (the soak's finding: an HTML 500,
the job written "queued" anyway, one more queued job per retry) answers 202 with its queued job,
a repeated click gives the same job, and it runs once the broker answers again. An export whose
run finds the disk full or loses the database waits queued and runs once they are back."""

from __future__ import annotations

import os
import shutil
import subprocess
from types import SimpleNamespace

import pytest
from django.db import OperationalError
from django.urls import reverse

from annotation.jobs import unsent_jobs_send
from annotation.models import UnsentJob
from scoring import profile_jobs, profiles
from scoring.profile_tasks import export_profile
from tests.outage import free_port, jobs_sent_to

pytestmark = pytest.mark.django_db

SMALL = {"resamples": 30, "adjusted_resamples": 10, "seed": 1}


def start(client, study, django_capture_on_commit_callbacks, **options):
    with django_capture_on_commit_callbacks(execute=True):
        return client.post(reverse("profile-jobs", args=[study.slug]), {**SMALL, **options},
                           content_type="application/json")


def test_an_export_started_while_the_broker_is_down_is_queued_once_and_runs_once_it_is_back(
    client, scripted, personas, settings, django_capture_on_commit_callbacks
):
    client.force_login(personas["researcher"])
    with jobs_sent_to(f"redis://127.0.0.1:{free_port()}/0", settings):
        first = start(client, scripted, django_capture_on_commit_callbacks)
        again = start(client, scripted, django_capture_on_commit_callbacks)
        other = start(client, scripted, django_capture_on_commit_callbacks, seed=2)
    assert first.status_code == again.status_code == other.status_code == 202, first.content
    assert first.json()["state"] == "queued"
    assert again.json()["job"] == first.json()["job"]  # a repeated click: the same job
    assert other.json()["job"] != first.json()["job"]  # other options: another export
    jobs = profile_jobs.profile_jobs(study=scripted)
    assert sorted(job["job"] for job in jobs) == sorted([first.json()["job"], other.json()["job"]])
    assert UnsentJob.objects.count() == 2

    assert len(unsent_jobs_send()) == 2  # eager here: sent and run
    assert client.get(first.json()["url"]).json()["state"] == "done"
    assert client.get(other.json()["url"]).json()["state"] == "done"


def test_a_repeated_click_after_the_repeat_window_is_a_new_export(
    client, scripted, personas, settings, django_capture_on_commit_callbacks
):
    settings.JOB_REPEAT_SECONDS = 0
    client.force_login(personas["researcher"])
    with jobs_sent_to(f"redis://127.0.0.1:{free_port()}/0", settings):
        first = start(client, scripted, django_capture_on_commit_callbacks)
        again = start(client, scripted, django_capture_on_commit_callbacks)
    assert again.json()["job"] != first.json()["job"]


def test_a_finished_export_asked_again_is_a_new_export(
    client, scripted, personas, django_capture_on_commit_callbacks
):
    client.force_login(personas["researcher"])
    first = start(client, scripted, django_capture_on_commit_callbacks)
    again = start(client, scripted, django_capture_on_commit_callbacks)
    assert client.get(first.json()["url"]).json()["state"] == "done"
    assert again.json()["job"] != first.json()["job"]


def queued_export(client, study, django_capture_on_commit_callbacks) -> str:
    """An export asked for and not sent yet (its job folder written, its message not sent)."""
    with django_capture_on_commit_callbacks(execute=False):
        answer = client.post(reverse("profile-jobs", args=[study.slug]), SMALL, content_type="application/json")
    assert answer.status_code == 202, answer.content
    return answer.json()["job"]


def give_up(study, job_id: str) -> None:
    """Run the export as its task does, until it gives up: the run puts the job back and raises
    for the task to try again; once the retries are spent, the task's failure hook keeps it."""
    with pytest.raises(profile_jobs.ProfileJobPostponed) as postponed:
        export_profile(study.pk, job_id)
    export_profile.on_failure(postponed.value, "task-1", (study.pk, job_id), {}, None)


def assert_waiting(study, job_id: str, why: str | None) -> None:
    """Queued as before (no attempt counted, no claim held) and kept to be sent again; its step
    says why when its status could be written (not on a full disk)."""
    status = profile_jobs.profile_job_status(study=study, job_id=job_id)
    assert status["state"] == "queued" and status["error"] == "", status
    assert status.get("attempts", 0) == 0
    assert why is None or why in status["step"]
    assert not (profile_jobs.job_dir(study, job_id) / "claim").exists()
    assert [(kept.task, kept.args) for kept in UnsentJob.objects.all()] == [
        ("scoring.profile_tasks.export_profile", [study.pk, job_id])]


@pytest.fixture
def small_media(settings, tmp_path):
    """MEDIA_ROOT on a 64 MB tmpfs; ``fill()`` takes its last byte, ``free()`` gives it back."""
    if os.geteuid() != 0 or not shutil.which("mount"):
        pytest.skip("mounting a tmpfs needs root (CI and `make test` run as root)")
    folder = tmp_path / "media"
    folder.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(folder)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    settings.MEDIA_ROOT = str(folder)

    def fill() -> None:
        with open(folder / "filler", "wb", buffering=0) as handle:
            try:
                while True:
                    handle.write(b"\0" * 65536)
            except OSError:
                pass

    try:
        yield SimpleNamespace(fill=fill, free=lambda: (folder / "filler").unlink())
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


def test_an_export_that_finds_the_disk_full_waits_queued_and_runs_once_there_is_room(
    client, scripted, personas, small_media, django_capture_on_commit_callbacks
):
    """The soak's finding: three exports failed for good on the full disk."""
    client.force_login(personas["researcher"])
    job_id = queued_export(client, scripted, django_capture_on_commit_callbacks)
    small_media.fill()
    give_up(scripted, job_id)
    assert_waiting(scripted, job_id, None)

    small_media.free()  # the admin frees some room; the recovery clock sends what was kept
    assert len(unsent_jobs_send()) == 1
    status = profile_jobs.profile_job_status(study=scripted, job_id=job_id)
    assert status["state"] == "done" and status["attempts"] == 1, status
    assert not UnsentJob.objects.exists()


def test_an_export_that_loses_the_database_midway_waits_queued_and_runs_once_it_is_back(
    client, scripted, personas, monkeypatch, django_capture_on_commit_callbacks
):
    """The soak's finding: an export failed for good on a PostgreSQL restart. The database
    drops out under the export's reads (after the job was claimed and marked running)."""
    client.force_login(personas["researcher"])
    job_id = queued_export(client, scripted, django_capture_on_commit_callbacks)
    reads = profiles.final_annotations

    def restarting(*args, **kwargs):
        raise OperationalError("terminating connection due to administrator command")

    monkeypatch.setattr(profiles, "final_annotations", restarting)
    give_up(scripted, job_id)
    assert_waiting(scripted, job_id, "the database did not answer")

    monkeypatch.setattr(profiles, "final_annotations", reads)
    assert len(unsent_jobs_send()) == 1
    assert profile_jobs.profile_job_status(study=scripted, job_id=job_id)["state"] == "done"


def test_an_export_that_fails_on_its_own_data_is_failed_for_good_naming_why(
    client, scripted, personas, monkeypatch, django_capture_on_commit_callbacks
):
    client.force_login(personas["researcher"])
    job_id = queued_export(client, scripted, django_capture_on_commit_callbacks)

    def broken(*args, **kwargs):
        raise profiles.ProfileError("No annotation of this study is approved yet.")

    monkeypatch.setattr(profiles, "final_annotations", broken)
    export_profile(scripted.pk, job_id)
    status = profile_jobs.profile_job_status(study=scripted, job_id=job_id)
    assert status["state"] == "failed" and "No annotation" in status["error"]
    assert not UnsentJob.objects.exists()
