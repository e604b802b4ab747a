"""Scoring jobs started while the broker does not answer: 202 with the queued job, one job per
click, run once the broker answers again."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from annotation.jobs import unsent_jobs_send
from annotation.models import UnsentJob
from scoring.models import ScoreJob
from tests.outage import free_port, jobs_sent_to

pytestmark = pytest.mark.django_db

JOBS = "/api/studies/s1/score-jobs/"


def test_a_study_job_clicked_twice_while_the_broker_is_down_is_one_queued_job_that_runs_later(
    personas, approved, fast_scoring, settings, django_capture_on_commit_callbacks
):
    client = APIClient()
    client.force_authenticate(personas["admin"])
    body = {"metrics": ["words_changed"]}
    with jobs_sent_to(f"redis://127.0.0.1:{free_port()}/0", settings), \
            django_capture_on_commit_callbacks(execute=True):
        first = client.post(JOBS, body, format="json")
        again = client.post(JOBS, body, format="json")
        other = client.post(JOBS, {"metrics": ["char_similarity"]}, format="json")
    assert first.status_code == again.status_code == other.status_code == 202, first.content
    assert first.json()["status"] == "queued"
    assert again.json()["id"] == first.json()["id"] != other.json()["id"]
    assert ScoreJob.objects.count() == 2 and UnsentJob.objects.count() == 2

    with django_capture_on_commit_callbacks(execute=True):
        unsent_jobs_send()  # eager here: sent and run
    assert ScoreJob.objects.get(pk=first.json()["id"]).status == "done"
