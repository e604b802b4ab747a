"""Blindness follows the person, not the page: whoever annotates or reviews in a study never
receives a model's name from anything there, whatever other roles they hold
(annotation.permissions.sees_model_identity)."""

from __future__ import annotations

import io
import zipfile

import pytest
from django.test import Client

from annotation.models import Annotation
from annotation.permissions import sees_model_identity
from annotation.services.studies import membership_grant
from annotation.services.workflow import annotations_assign, review_approve, review_claim
from tests.annotation.studybuild import SECRET_MODEL, caption_record, captions_add, complete, fake_clip

pytestmark = pytest.mark.django_db

NAME_OPTION = '<option value="name">'


@pytest.fixture
def blind_admins(study, personas, make_user):
    """Study s1 with one approved verdict; `annotating-admin` and `reviewing-admin` are study
    admins who also annotate or review there; `admin` only administers it."""
    fake_clip(study, "b")
    captions_add(study, [caption_record("b", SECRET_MODEL)])
    annotations_assign(study=study, annotators=[personas["annotator"]])
    item = complete(Annotation.objects.get(annotator=personas["annotator"]), personas["annotator"])
    review_claim(annotation_id=item.pk, actor=personas["reviewer"])
    review_approve(annotation_id=item.pk, actor=personas["reviewer"])
    people = {}
    for name, second_role in (("annotating-admin", "annotator"), ("reviewing-admin", "reviewer")):
        people[name] = make_user(name)
        membership_grant(study=study, user=people[name], role="admin")
        membership_grant(study=study, user=people[name], role=second_role)
    people["admin"] = personas["admin"]
    return people


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def zip_text(data: bytes) -> str:
    with zipfile.ZipFile(io.BytesIO(data)) as bundle:
        return "".join(bundle.read(name).decode("utf-8", errors="replace") for name in bundle.namelist()
                       if not name.endswith(".parquet"))


def test_an_admin_who_annotates_gets_no_release_by_model_name(study, blind_admins):
    client = signed_in(blind_admins["annotating-admin"])
    refused = client.get("/studies/s1/release.zip?models=name")
    assert refused.status_code == 403
    assert "work blind" in refused.content.decode() and SECRET_MODEL not in refused.content.decode()
    by_alias = client.get("/studies/s1/release.zip?models=alias")
    assert by_alias.status_code == 200
    text = zip_text(by_alias.content)
    assert "Model A" in text and SECRET_MODEL not in text


def test_an_admin_who_only_administers_gets_the_release_by_name(study, blind_admins):
    answer = signed_in(blind_admins["admin"]).get("/studies/s1/release.zip?models=name")
    assert answer.status_code == 200
    assert SECRET_MODEL in zip_text(answer.content)


def test_models_by_name_is_offered_only_to_who_may_see_names(study, blind_admins):
    assert NAME_OPTION in signed_in(blind_admins["admin"]).get("/studies/s1/").content.decode()
    for name in ("annotating-admin", "reviewing-admin"):
        page = signed_in(blind_admins[name]).get("/studies/s1/").content.decode()
        assert 'id="release-models"' in page and NAME_OPTION not in page, name
        assert SECRET_MODEL not in page, name


@pytest.mark.parametrize("person", ["annotating-admin", "reviewing-admin"])
def test_no_page_or_api_names_a_model_to_an_admin_who_works_blind(person, study, blind_admins):
    user = blind_admins[person]
    assert not sees_model_identity(user, study)
    client = signed_in(user)
    for url in ("/studies/s1/profiles/", "/api/studies/s1/scores/", "/api/studies/s1/scores/summary/",
                "/api/studies/s1/score-jobs/"):
        answer = client.get(url)
        assert answer.status_code == 403, (url, answer.status_code)
        assert SECRET_MODEL not in answer.content.decode()
    for url in ("/studies/s1/progress/", "/api/studies/s1/models/", "/api/studies/s1/captions/",
                "/studies/s1/clips/b/",
                # The people's pages: gold items, guidelines, annotator quality, the work log.
                "/studies/s1/gold/", "/api/studies/s1/gold/", "/studies/s1/guidelines/", "/api/studies/s1/guidelines/",
                "/studies/s1/annotator-quality/", "/api/studies/s1/annotator-quality/",
                "/studies/s1/annotator-quality.csv", "/studies/s1/work-log/", "/api/studies/s1/work-log/"):
        answer = client.get(url)
        assert answer.status_code == 200, (url, answer.status_code)
        assert SECRET_MODEL not in answer.content.decode(), url
    # The same pages name the model to the admin who does not work blind.
    admin = signed_in(blind_admins["admin"])
    assert SECRET_MODEL in admin.get("/studies/s1/progress/").content.decode()
    assert admin.get("/studies/s1/profiles/").status_code == 200
