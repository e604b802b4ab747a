"""The refusals of the run-your-own-study flow, through the REST API a script would use: a study
a site admin creates starts in setup; starting it with no members names every missing item; it
cannot be closed before it runs; its annotator sees no queue until it starts. Runs on SQLite and
on PostgreSQL (tests/browser/test_run_your_own_study.py walks the same flow in the pages)."""

import pytest
from rest_framework.test import APIClient

from annotation.models import Study
from annotation.services.studies import membership_grant

pytestmark = pytest.mark.django_db


def client_for(user):
    client = APIClient()
    client.force_authenticate(user)
    return client


def test_a_study_made_through_the_api_refuses_to_start_or_close_naming_what_is_missing(make_user):
    root = client_for(make_user("root", is_staff=True))
    made = root.post("/api/studies/", {"slug": "lab-walk", "name": "Lab walk", "undo_seconds": 0}, format="json")
    assert made.status_code == 201, made.json()
    study = Study.objects.get(slug="lab-walk")
    assert (study.state, study.undo_seconds) == ("setup", 0)

    refused = root.post("/api/studies/lab-walk/start/")
    assert refused.status_code == 400
    assert {item["key"] for item in refused.json()["missing"]} == {
        "clips", "captions", "members_annotator", "members_reviewer", "members_researcher", "assignment"}
    for missing in ("no clips imported", "no member is an annotator", "no caption is assigned"):
        assert missing in refused.json()["detail"]

    closed = root.post("/api/studies/lab-walk/close/", {"confirm": True}, format="json")
    assert closed.status_code == 409
    assert closed.json()["detail"].endswith("only a study running can be closed.")  # not "closeed"

    annotator = make_user("ana")
    membership_grant(study=study, user=annotator, role="annotator")
    queue = client_for(annotator).post("/api/studies/lab-walk/my-queue/next/")
    assert queue.status_code == 409 and queue.json()["state"] == "setup"  # the state's refusal
    assert "work opens when its admin starts it" in queue.json()["detail"]
    assert Study.objects.get(slug="lab-walk").state == "setup"
