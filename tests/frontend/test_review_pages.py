"""The QC reviewer's pages: who may open them, what they carry, and what they hide."""

import json
import re

import pytest

from annotation.models import CandidateModel

pytestmark = pytest.mark.django_db

SECRET = "acme-secret-vlm-72b"


@pytest.fixture
def blinded(annotation):
    """`annotation` with its model renamed to something a reviewer must never see."""
    CandidateModel.objects.filter(pk=annotation.caption.model_id).update(name=SECRET, identifier=SECRET)
    return annotation


def signed_in(client, user):
    client.force_login(user)
    return client


def page_data(response, element_id):
    match = re.search(rf'<script id="{element_id}" type="application/json">(.*?)</script>',
                      response.content.decode(), re.S)
    return json.loads(match.group(1))


def test_reviewer_opens_the_review_queue_with_its_filters(client, personas, caption):
    response = signed_in(client, personas["reviewer"]).get("/studies/s1/review/")
    assert response.status_code == 200
    config = page_data(response, "review-queue-config")
    assert config["queue_url"] == "/api/studies/s1/review-queue/"
    assert config["models"] == ["Model A"] and config["can_review"] is True


def test_admin_sees_the_queue_but_may_not_claim_from_it(client, personas, caption):
    response = signed_in(client, personas["admin"]).get("/studies/s1/review/")
    assert response.status_code == 200
    assert page_data(response, "review-queue-config")["can_review"] is False


@pytest.mark.parametrize("persona, status", [("annotator", 403), ("researcher", 403), ("outsider", 404)])
def test_others_cannot_open_the_review_queue(client, personas, persona, status):
    assert signed_in(client, personas[persona]).get("/studies/s1/review/").status_code == status


def test_signed_out_visitors_are_sent_to_the_login(client, personas, annotation):
    assert client.get(f"/review/{annotation.pk}/").url.startswith("/login/")


def test_review_page_shows_the_model_alias_only(client, personas, blinded):
    for persona in ("reviewer", "admin"):
        response = signed_in(client, personas[persona]).get(f"/review/{blinded.pk}/")
        assert response.status_code == 200
        assert SECRET not in response.content.decode()
        assert page_data(response, "review-data")["caption"]["model"] == "Model A"


def test_review_page_lets_reviewers_act_and_admins_only_look(client, personas, annotation):
    reviewer = page_data(signed_in(client, personas["reviewer"]).get(f"/review/{annotation.pk}/"), "review-config")
    admin = page_data(signed_in(client, personas["admin"]).get(f"/review/{annotation.pk}/"), "review-config")
    assert (reviewer["can_review"], admin["can_review"]) == (True, False)
    assert reviewer["api"] == f"/api/annotations/{annotation.pk}/"


@pytest.mark.parametrize("persona, status", [("annotator", 403), ("researcher", 403), ("outsider", 404)])
def test_others_cannot_open_the_review_page(client, personas, annotation, persona, status):
    assert signed_in(client, personas[persona]).get(f"/review/{annotation.pk}/").status_code == status


def test_caption_html_reaches_the_page_only_as_escaped_data(client, personas, annotation):
    caption = annotation.caption
    caption.overview = '<script>window.__pwned=1</script>'
    caption.save()
    response = signed_in(client, personas["reviewer"]).get(f"/review/{annotation.pk}/")
    assert "<script>window.__pwned" not in response.content.decode()
    assert page_data(response, "review-data")["caption"]["overview"] == caption.overview


def test_study_page_links_the_review_queue_for_reviewers_only(client, personas):
    assert "/studies/s1/review/" in signed_in(client, personas["reviewer"]).get("/studies/s1/").content.decode()
    assert "/studies/s1/review/" not in signed_in(client, personas["annotator"]).get("/studies/s1/").content.decode()


def test_the_review_page_reads_the_annotation_with_its_passes_and_the_viewer_s_roles_once(
        client, personas, annotation, monkeypatch):
    """As the workspace's API reads it: one statement for the annotation, its relations, its
    passes and the reviewer's roles, and the consent gate's; none of the page's reads built again
    after the first view."""
    from django.db import connection
    from django.db.models.sql import compiler
    from django.test.utils import CaptureQueriesContext

    reviewer = signed_in(client, personas["reviewer"])
    assert reviewer.get(f"/review/{annotation.pk}/").status_code == 200
    made = []
    original = compiler.SQLCompiler.as_sql
    monkeypatch.setattr(compiler.SQLCompiler, "as_sql",
                        lambda self, *a, **k: made.append(self.query.model) or original(self, *a, **k))
    with CaptureQueriesContext(connection) as captured:
        response = reviewer.get(f"/review/{annotation.pk}/")
    assert response.status_code == 200 and page_data(response, "review-config")["reviewer"] is True
    sql = [q["sql"] for q in captured.captured_queries]
    assert made == [], made
    for table in ("annotation_membership", "annotation_correctionpass"):  # read with the annotation
        assert not [s for s in sql if s.startswith(f'SELECT "{table}".')], sql
    consent = [s for s in sql if '"annotation_consentversion"' in s]  # the consent gate's, too
    assert len(consent) == 1 and 'FROM "annotation_annotation"' in consent[0], consent
