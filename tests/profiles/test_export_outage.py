"""A profile export started while the broker does not answer (the soak's finding: an HTML 500,
the job written "queued" anyway, one more queued job per retry) answers 202 with its queued job,
a repeated click gives the same job, and it runs once the broker answers again."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.jobs import unsent_jobs_send
from annotation.models import UnsentJob
from scoring import profiles
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
    jobs = profiles.profile_jobs(study=scripted)
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
