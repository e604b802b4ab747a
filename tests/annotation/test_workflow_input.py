"""Malformed input to the workflow API: a 4xx naming the field, never a 500, nothing written."""

import pytest
from rest_framework.test import APIClient

from annotation.models import Annotation, AuditEvent
from annotation.services.workflow import annotation_save
from tests.annotation.test_workflow import complete

pytestmark = pytest.mark.django_db


def client_for(user):
    client = APIClient()
    client.force_authenticate(user)
    return client


def draft(annotation, user, changes, base_version=None):
    return client_for(user).patch(f"/api/annotations/{annotation.pk}/draft/", {
        "base_version": base_version or annotation.version, "changes": changes,
    }, format="json")


def test_a_non_numeric_watched_share_is_refused_naming_the_field(annotation, personas):
    bad = {"telemetry": {"watched_share": "all of it"}}
    response = draft(annotation, personas["annotator"], bad)
    assert response.status_code == 400
    assert "watched_share" in response.content.decode()
    stored = Annotation.objects.get(pk=annotation.pk)
    assert stored.telemetry == {} and stored.version == annotation.version


def test_a_watched_share_outside_zero_to_one_is_refused(annotation, personas):
    response = draft(annotation, personas["annotator"], {"telemetry": {"watched_share": 7}})
    assert response.status_code == 400 and "watched_share" in response.content.decode()


def test_the_review_queue_survives_a_bad_watched_share_already_stored(annotation, personas):
    """Values stored before saves were validated (or written around them) must not stop QC."""
    annotation = annotation_save(annotation_id=annotation.pk, actor=personas["annotator"],
                                 base_version=annotation.version, changes={"active_seconds": 3})
    complete(annotation, personas["annotator"])
    for bad in ("all of it", [1, 2], {"a": 1}, "nan", "inf", 10**400):
        Annotation.objects.filter(pk=annotation.pk).update(telemetry={"watched_share": bad})
        response = client_for(personas["reviewer"]).get("/api/studies/s1/review-queue/")
        assert response.status_code == 200, bad
        assert [item["id"] for item in response.json()["items"]] == [annotation.pk]


def test_a_refused_save_writes_nothing_to_the_audit_trail(annotation, personas):
    before = AuditEvent.objects.count()
    response = draft(annotation, personas["annotator"], {
        "overview": {"verdict": "reject", "text": "A new overview."},
        "telemetry": {"watched_share": "x"},
    })
    assert response.status_code == 400
    assert AuditEvent.objects.count() == before
    assert Annotation.objects.get(pk=annotation.pk).version == annotation.version


def test_the_save_service_refuses_a_non_numeric_watched_share(annotation, personas):
    from annotation.services.errors import ServiceError

    with pytest.raises(ServiceError, match="watched_share"):
        annotation_save(annotation_id=annotation.pk, actor=personas["annotator"],
                        base_version=annotation.version,
                        changes={"telemetry": {"watched_share": "1"}})
    assert Annotation.objects.get(pk=annotation.pk).version == annotation.version
