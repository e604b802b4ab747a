"""The workflow over HTTP: the workspace's autosave, 409 on stale saves, QC actions."""

import pytest
from rest_framework.test import APIClient

pytestmark = pytest.mark.django_db


def client_for(user):
    client = APIClient()
    client.force_authenticate(user)
    return client


def test_annotator_opens_next_item_and_autosaves_with_versions(annotation, personas):
    client = client_for(personas["annotator"])
    started = client.post("/api/studies/s1/my-queue/next/").json()
    data = client.get(f"/api/annotations/{started['id']}/").json()
    assert data["caption"]["model"] == "Model A" and data["state"] == "in_progress"
    saved = client.patch(f"/api/annotations/{data['id']}/draft/", {
        "base_version": data["version"], "changes": {"overview": {"verdict": "reject", "text": "New text"}},
    }, format="json")
    assert saved.status_code == 200 and saved.json()["version"] == data["version"] + 1
    stale = client.patch(f"/api/annotations/{data['id']}/draft/", {
        "base_version": data["version"], "changes": {"overview": {"text": "Other tab"}},
    }, format="json")
    assert stale.status_code == 409
    assert stale.json()["current"]["annotator_pass"]["overview"]["text"] == "New text"


def test_queue_lists_returned_items_first_with_the_comment(annotation, personas):
    queue = client_for(personas["annotator"]).get("/api/studies/s1/my-queue/").json()
    assert queue["total"] == 1 and queue["items"][0]["state"] == "in_progress"


def test_edit_size_readout_comes_from_the_scoring_library(personas):
    data = client_for(personas["annotator"]).post("/api/edit-size/", {
        "study": "s1", "original": "a red car drives left", "corrected": "a blue truck drives left",
    }, format="json").json()
    assert data["words_changed"] == 2
    assert {"op": "delete", "text": "red car"} in [{"op": d["op"], "text": d["text"].strip()} for d in data["diff"]]


def test_other_annotators_cannot_read_an_annotation(annotation, personas, make_user, study):
    from annotation.services.studies import membership_grant

    other = make_user("other")
    membership_grant(study=study, user=other, role="annotator")
    assert client_for(other).get(f"/api/annotations/{annotation.pk}/").status_code == 403


def test_review_queue_is_for_reviewers(annotation, personas):
    assert client_for(personas["annotator"]).get("/api/studies/s1/review-queue/").status_code == 403
    assert client_for(personas["reviewer"]).get("/api/studies/s1/review-queue/").status_code == 200


def test_admin_assigns_round_robin_through_the_api(caption, personas):
    response = client_for(personas["admin"]).post(
        "/api/studies/s1/assignments/", {"annotators": ["annotator"]}, format="json"
    )
    assert response.status_code == 201 and response.json()["created"] == 1
    refused = client_for(personas["annotator"]).post(
        "/api/studies/s1/assignments/", {"annotators": ["annotator"]}, format="json"
    )
    assert refused.status_code == 403
