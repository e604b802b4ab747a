"""Retention of profile exports: when one ends, the oldest ended ones of its study beyond
PROFILE_EXPORTS_KEPT are deleted; never one queued or running, never the final profile."""

import pytest
from django.urls import reverse

from annotation.models import AuditEvent
from scoring import profile_jobs
from tests.profiles.fake_exports import an_export

pytestmark = pytest.mark.django_db

SMALL = {"resamples": 30, "adjusted_resamples": 10, "seed": 1}


def listed(study) -> list[str]:
    return [status["job"] for status in profile_jobs.profile_jobs(study=study)]


def test_retention_keeps_exactly_the_newest_ended_exports_and_never_a_waiting_one(study, settings,
                                                                                 django_capture_on_commit_callbacks):
    settings.PROFILE_EXPORTS_KEPT = 2
    old = [an_export(study, state=state, created_at=f"2026-01-0{day}T00:00:00+00:00")
           for day, state in ((1, "done"), (2, "failed"), (3, "done"), (4, "failed"), (5, "done"))]
    waiting = [an_export(study, state="running", created_at="2025-12-01T00:00:00+00:00"),
               an_export(study, state="queued", created_at="2025-12-02T00:00:00+00:00")]
    final = an_export(study, state="done", created_at="2025-11-01T00:00:00+00:00", final=True)
    with django_capture_on_commit_callbacks(execute=True):
        removed = profile_jobs.profile_exports_prune(study=study)
    assert sorted(removed) == sorted(old[:3])
    assert sorted(listed(study)) == sorted([old[3], old[4], *waiting, final])
    assert sorted(p.name for p in profile_jobs.jobs_root(study).iterdir()) == sorted(listed(study))
    event = AuditEvent.objects.get(study=study, action="profile_export_prune")
    assert event.actor is None and event.before["kept"] == 2
    assert sorted(e["export"] for e in event.before["exports"]) == sorted(old[:3])
    # Nothing beyond the count any more: a second pruning deletes nothing and records nothing.
    assert profile_jobs.profile_exports_prune(study=study) == []
    assert AuditEvent.objects.filter(action="profile_export_prune").count() == 1


def test_zero_keeps_every_export(study, settings):
    settings.PROFILE_EXPORTS_KEPT = 0
    jobs = [an_export(study, state="done", created_at=f"2026-01-0{day}T00:00:00+00:00") for day in (1, 2, 3)]
    assert profile_jobs.profile_exports_prune(study=study) == []
    assert sorted(listed(study)) == sorted(jobs)


def test_an_export_that_finishes_deletes_the_oldest_beyond_the_count(
    client, scripted, personas, settings, django_capture_on_commit_callbacks
):
    """Through the real run: the new export ends, then retention runs."""
    settings.PROFILE_EXPORTS_KEPT = 2
    older = [an_export(scripted, state="done", created_at=f"2000-01-0{day}T00:00:00+00:00") for day in (1, 2, 3)]
    running = an_export(scripted, state="running", created_at="1999-01-01T00:00:00+00:00")
    client.force_login(personas["researcher"])
    with django_capture_on_commit_callbacks(execute=True):
        started = client.post(reverse("profile-jobs", args=[scripted.slug]), SMALL, content_type="application/json")
    new = started.json()["job"]
    assert profile_jobs.profile_job_status(study=scripted, job_id=new)["state"] == "done"
    assert sorted(listed(scripted)) == sorted([new, older[2], running])
    assert sorted(p.name for p in profile_jobs.jobs_root(scripted).iterdir()) == sorted(listed(scripted))


def test_a_failing_retention_never_fails_the_export(client, scripted, personas, settings, monkeypatch, caplog,
                                                    django_capture_on_commit_callbacks):
    def broken(**kwargs):
        raise OSError("read-only file system")

    monkeypatch.setattr(profile_jobs, "profile_exports_prune", broken)
    client.force_login(personas["researcher"])
    with django_capture_on_commit_callbacks(execute=True):
        started = client.post(reverse("profile-jobs", args=[scripted.slug]), SMALL, content_type="application/json")
    assert profile_jobs.profile_job_status(study=scripted, job_id=started.json()["job"])["state"] == "done"
    assert "old profile exports of study s1 could not be deleted" in caplog.text
