"""The scoring API (job table, starting a study job, scores) and the study page's job table."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from scoring.models import ScoreJob
from scoring.services import score_job_create

pytestmark = pytest.mark.django_db

JOBS = "/api/studies/s1/score-jobs/"


def client_for(user):
    client = APIClient()
    client.force_authenticate(user)
    return client


@pytest.mark.parametrize("role", ["admin", "researcher"])
def test_admins_and_researchers_see_the_job_table(personas, approved, fast_scoring, role):
    job = score_job_create(
        study=approved.caption.clip.study,
        kind="verdict",
        annotation=approved,
        metrics=["words_changed", "llmfacts_f1"],
    )
    answer = client_for(personas[role]).get(JOBS)
    assert answer.status_code == 200
    [row] = answer.json()["results"]
    assert row["id"] == job.pk and row["kind"] == "verdict" and row["annotation"] == approved.pk
    # Not run yet: the test transaction has not committed.
    assert (row["status"], row["progress"]) == ("queued", {"done": 0, "total": 0, "percent": 0})
    detail = client_for(personas[role]).get(f"{JOBS}{job.pk}/")
    assert detail.json()["metrics"] == ["words_changed", "llmfacts_f1"]


@pytest.mark.parametrize(("role", "answer"), [("annotator", 403), ("reviewer", 403),
                                              ("outsider", 404)])
def test_others_do_not_see_the_job_table_or_the_scores(personas, role, answer):
    client = client_for(personas[role])
    assert client.get(JOBS).status_code == answer
    assert client.get("/api/studies/s1/scores/summary/").status_code == answer
    assert client.get("/api/studies/s1/scores/").status_code == answer


def test_an_admin_starts_a_study_job_and_without_a_broker_it_runs(
    personas, approved, fast_scoring, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        answer = client_for(personas["admin"]).post(
            JOBS, {"metrics": ["words_changed", "llmfacts_f1"]}, format="json"
        )
    assert answer.status_code == 202, answer.json()
    job = client_for(personas["admin"]).get(f"{JOBS}{answer.json()['id']}/").json()
    assert (job["kind"], job["status"], job["requested_by"]) == ("study", "partial", "admin")
    assert job["progress"] == {"done": 10, "total": 10, "percent": 100}  # 5 items, 2 families
    assert job["errors"]["llmfacts_f1"].startswith(
        "overview, windows: llmfacts_f1 is not configured"
    )

    summary = client_for(personas["researcher"]).get("/api/studies/s1/scores/summary/").json()
    rows = {(row["subject"], row["metric"]): row for row in summary}
    assert rows[("overview", "words_changed")]["count"] == 1
    assert rows[("window_scene", "words_changed")]["count"] == 2
    assert rows[("overview", "words_changed")]["mean"] == 5.0

    scores = (
        client_for(personas["researcher"]).get("/api/studies/s1/scores/?subject=overview").json()
    )
    assert [(r["metric"], r["value"], r["annotation"]) for r in scores["results"]] == [
        ("words_changed", 5.0, approved.pk)
    ]


@pytest.mark.parametrize(("role", "status"), [("annotator", 403), ("reviewer", 403), ("outsider", 404)])
def test_only_admins_and_researchers_may_start_a_job(personas, role, status):
    answer = client_for(personas[role]).post(JOBS, {}, format="json")
    assert answer.status_code == status
    if status == 403:
        assert answer.json()["detail"] == "Only the study's admins and researchers start scoring jobs."
    assert not ScoreJob.objects.exists()


@pytest.mark.parametrize("role", ["admin", "researcher"])
def test_admins_and_researchers_start_a_study_job(personas, approved, fast_scoring, role):
    answer = client_for(personas[role]).post(JOBS, {"metrics": ["words_changed"]}, format="json")
    assert answer.status_code == 202, answer.json()
    job = ScoreJob.objects.get(pk=answer.json()["id"])
    assert (job.kind, job.requested_by.username) == ("study", role)


def test_starting_a_job_with_unknown_metrics_is_refused(personas):
    answer = client_for(personas["admin"]).post(JOBS, {"metrics": ["bleu9"]}, format="json")
    assert answer.status_code == 400
    assert "Unknown metric(s) bleu9" in answer.json()["detail"]


def test_anonymous_requests_are_refused(study):
    assert APIClient().get(JOBS).status_code == 403


@pytest.mark.parametrize(("role", "shown"), [("admin", True), ("researcher", True), ("annotator", False),
                                             ("reviewer", False)])
def test_the_study_page_shows_the_job_table_and_score_now_to_admins_and_researchers(client, personas, role, shown):
    client.force_login(personas[role])
    page = client.get("/studies/s1/").content.decode()
    assert ('id="score-now"' in page) is shown
    assert ('id="score-job-table"' in page) is shown
    assert ("frontend/score_jobs.js" in page) is shown


def test_an_admin_cancels_a_queued_job_and_a_researcher_may_not(personas, study):
    job = score_job_create(study=study, metrics=["words_changed"], enqueue=False)
    url = f"{JOBS}{job.pk}/cancel/"
    assert client_for(personas["researcher"]).post(url).status_code == 403
    answer = client_for(personas["admin"]).post(url)
    assert answer.status_code == 200, answer.json()
    body = answer.json()
    assert body["status"] == "cancelled"
    assert body["chunks"] == {"total": 0, "done": 0, "failed": 0}
    again = client_for(personas["admin"]).post(url)
    assert again.status_code == 409 and "cancelled" in again.json()["detail"]
