"""A reviewer reviews blind whatever other roles they hold: the API says what the review page
shows (the alias), and its schema promises no field that such answers leave out."""

from __future__ import annotations

import pytest
from django.test import Client

from annotation.models import Annotation
from annotation.services.studies import membership_grant
from annotation.services.workflow import annotations_assign, review_claim
from tests.annotation.studybuild import SECRET_MODEL, caption_record, captions_add, complete, fake_clip
from tests.test_api_schema import CSRF_SECRET, keep_the_test_connection, published_schema  # noqa: F401

pytestmark = pytest.mark.django_db


@pytest.fixture
def submitted(study, personas):
    fake_clip(study, "a")
    captions_add(study, [caption_record("a", SECRET_MODEL)])
    annotations_assign(study=study, annotators=[personas["annotator"]])
    return complete(Annotation.objects.get(), personas["annotator"])


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_an_admin_who_also_reviews_gets_no_model_name_for_an_item_waiting_for_review(
    submitted, study, personas
):
    membership_grant(study=study, user=personas["admin"], role="reviewer")
    answer = signed_in(personas["admin"]).get(f"/api/annotations/{submitted.pk}/")
    assert answer.status_code == 200
    assert answer.json()["caption"]["model"] == "Model A"
    assert SECRET_MODEL not in answer.content.decode()


def test_an_admin_who_also_reviews_gets_no_model_name_for_the_item_they_review(
    submitted, study, personas
):
    membership_grant(study=study, user=personas["admin"], role="reviewer")
    review_claim(annotation_id=submitted.pk, actor=personas["admin"])
    client = signed_in(personas["admin"])
    for path in (f"/api/annotations/{submitted.pk}/", f"/review/{submitted.pk}/"):
        answer = client.get(path)
        assert answer.status_code == 200, path
        assert SECRET_MODEL not in answer.content.decode(), path


def test_an_admin_who_does_not_review_still_sees_the_model_name(submitted, personas):
    answer = signed_in(personas["admin"]).get(f"/api/annotations/{submitted.pk}/")
    assert answer.json()["caption"]["model"] == SECRET_MODEL


# ------------------------------------------------------------------ the schema matches real answers


def session_cookies(user) -> dict[str, str]:
    return {"sessionid": signed_in(user).cookies["sessionid"].value, "csrftoken": CSRF_SECRET}


@pytest.mark.parametrize(("path", "persona"), [
    ("/api/studies/{slug}/models/", "reviewer"),  # aliases only
    ("/api/studies/{slug}/models/", "admin"),
    ("/api/annotations/{annotation_id}/", "reviewer"),  # no QC pass yet: qc_pass is {}
])
def test_real_answers_match_the_published_schema(submitted, personas, path, persona):
    operation = published_schema()[path]["GET"]
    case = operation.Case(path_parameters={"slug": "s1", "annotation_id": submitted.pk}
                          if "annotation_id" in path else {"slug": "s1"},
                          cookies=session_cookies(personas[persona]))
    response = case.call()
    assert response.status_code == 200, response.text[:300]
    operation.validate_response(response)
