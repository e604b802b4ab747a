"""Property-based tests of the parsers people can reach: the draft and amend bodies, and imports.

For any JSON value sent, the answer is a success or a 4xx that says why (naming the field
where DRF keyed its errors), never a server error, and a refusal writes nothing. Hypothesis
builds the values from a vocabulary of the real field names, so that many of them get past
the first check and reach the deeper ones (a window's start, a mode of the segmentation).
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rest_framework.test import APIClient

from annotation.models import Annotation, AuditEvent, Caption, Reference
from annotation.services.workflow import annotation_snapshot

pytestmark = pytest.mark.django_db

FIELDS = [
    "base_version", "changes", "overview", "windows", "segmentation", "ui_state", "telemetry",
    "active_seconds", "verdict", "text", "modes", "index", "scene", "shot", "start", "end",
    "watched_share", "watched", "seeks", "speeds", "units", "unit", "comment",
    "clip", "model", "meta", "source", "language",
]
WORDS = ["accept", "reject", "", "factual", "temporal", "overview", "window:0", "b", "m1"]

scalars = (
    st.none() | st.booleans() | st.integers(min_value=-(10**40), max_value=10**40)
    | st.floats(allow_nan=False, allow_infinity=False) | st.sampled_from(WORDS)
    | st.text(max_size=20)
)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.sampled_from(FIELDS) | st.text(max_size=8), inner, max_size=5),
    max_leaves=25,
)
# A property test runs many examples in one test's database transaction; the fixtures are
# built once per test, which is what these tests want (the stored state carries over).
PROPERTY = settings(max_examples=60, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow])


def client_for(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    client.raise_request_exception = False
    return client


def stored(annotation_id: int):
    return annotation_snapshot(Annotation.objects.get(pk=annotation_id)), AuditEvent.objects.count()


def assert_answer_says_why(response) -> None:
    """2xx, or a 4xx whose `detail` says why and names every field it keys an error by."""
    assert response.status_code < 500, response.content[:500]
    if response.status_code < 400:
        return
    answer = response.json()
    assert isinstance(answer, dict) and answer.get("detail"), answer
    for field in answer:
        if field not in ("detail", "current", "errors"):
            named = "body" if field == "non_field_errors" else field
            assert named in answer["detail"], (field, answer["detail"])


@given(changes=json_values)
@PROPERTY
def test_any_json_as_draft_changes_is_saved_or_refused_saying_why(annotation, personas, changes):
    version = Annotation.objects.get(pk=annotation.pk).version
    before = stored(annotation.pk)
    response = client_for(personas["annotator"]).patch(
        f"/api/annotations/{annotation.pk}/draft/",
        {"base_version": version, "changes": changes}, format="json")
    assert_answer_says_why(response)
    if response.status_code >= 400:
        assert stored(annotation.pk) == before


@given(body=json_values)
@PROPERTY
def test_any_json_as_the_whole_draft_body_is_refused_saying_why(annotation, personas, body):
    before = stored(annotation.pk)
    response = client_for(personas["annotator"]).patch(
        f"/api/annotations/{annotation.pk}/draft/", json.dumps(body),
        content_type="application/json")
    assert_answer_says_why(response)
    if response.status_code >= 400:
        assert stored(annotation.pk) == before


@pytest.fixture
def in_review(caption, personas, study, make_user):
    """A function giving an annotation of `caption` submitted by a new annotator and claimed by
    the reviewer: a QC decision is final, so each accepted one needs a fresh annotation."""
    from annotation.services.studies import membership_grant
    from annotation.services.taxonomy import taxonomy_freeze
    from annotation.services.workflow import annotation_open, review_claim
    from tests.annotation.test_workflow import complete

    def fresh() -> Annotation:
        person = make_user(f"annotator{Annotation.objects.count() + 1}")
        membership_grant(study=study, user=person, role="annotator")
        # Assignment gives a caption to one annotator (two with overlap); QC needs more here.
        assigned = Annotation.objects.create(caption=caption, annotator=person,
                                             taxonomy=taxonomy_freeze(taxonomy=study.taxonomy))
        annotation = annotation_open(annotation=assigned, actor=person)
        complete(annotation, person)
        return review_claim(annotation_id=annotation.pk, actor=personas["reviewer"],
                            minutes=24 * 60)

    current = [fresh()]

    def claimed(*, replace: bool = False) -> Annotation:
        if replace:
            current[0] = fresh()
        return current[0]

    return claimed


@given(changes=json_values)
@PROPERTY
def test_any_json_as_an_amendment_is_stored_or_refused_saying_why(in_review, personas, changes):
    target = in_review()
    before = stored(target.pk)
    response = client_for(personas["reviewer"]).post(
        f"/api/annotations/{target.pk}/amend/", {"changes": changes}, format="json")
    assert_answer_says_why(response)
    if response.status_code >= 400:
        assert stored(target.pk) == before
    else:
        in_review(replace=True)


@given(body=json_values)
@PROPERTY
def test_any_json_as_a_return_is_done_or_refused_saying_why(in_review, personas, body):
    target = in_review()
    before = stored(target.pk)
    response = client_for(personas["reviewer"]).post(
        f"/api/annotations/{target.pk}/return/", json.dumps(body),
        content_type="application/json")
    assert_answer_says_why(response)
    if response.status_code >= 400:
        assert stored(target.pk) == before
    else:
        in_review(replace=True)


def upload(client, url: str, lines: list) -> object:
    from django.core.files.uploadedfile import SimpleUploadedFile

    data = "\n".join(json.dumps(line) for line in lines).encode()
    return client.post(url, {"file": SimpleUploadedFile("file.jsonl", data)}, format="multipart")


@given(lines=st.lists(json_values, min_size=1, max_size=4))
@PROPERTY
def test_any_json_lines_as_captions_are_imported_or_refused_by_line(caption, personas, lines):
    before = Caption.objects.count()
    response = upload(client_for(personas["admin"]), "/api/studies/s1/captions/import/", lines)
    assert response.status_code in (201, 400), response.content[:500]
    if response.status_code == 400:
        answer = response.json()
        assert answer["detail"] and all(error.startswith("line ") for error in answer["errors"])
        assert Caption.objects.count() == before


@given(lines=st.lists(json_values, min_size=1, max_size=4))
@PROPERTY
def test_any_json_lines_as_references_are_imported_or_refused_by_line(caption, personas, lines):
    before = Reference.objects.count()
    response = upload(client_for(personas["admin"]), "/api/studies/s1/references/import/", lines)
    assert response.status_code in (201, 400), response.content[:500]
    if response.status_code == 400:
        answer = response.json()
        assert answer["detail"] and all(error.startswith("line ") for error in answer["errors"])
        assert Reference.objects.count() == before
