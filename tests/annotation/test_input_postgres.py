"""PostgreSQL refuses NUL characters in text: every way one can arrive answers 400, naming where.

Under SQLite NUL is stored without complaint, so these run on PostgreSQL only.
"""

import pytest
from rest_framework.test import APIClient

from annotation.models import Annotation, AuditEvent

pytestmark = [pytest.mark.postgres, pytest.mark.django_db]


def client_for(user):
    client = APIClient()
    client.force_authenticate(user)
    client.raise_request_exception = False
    return client


@pytest.mark.parametrize(("who", "url", "parameter"), [
    ("admin", "/api/studies/s1/captions/?clip=b%00", "clip"),
    ("reviewer", "/api/studies/s1/review-queue/?model=A%00", "model"),
    ("reviewer", "/api/studies/s1/review-queue/?annotator=x%00y", "annotator"),
    ("reviewer", "/api/studies/s1/review-queue/?state=sub%00mitted", "state"),
    ("admin", "/api/studies/s1/scores/?metric=%00", "metric"),
    ("admin", "/api/studies/s1/scores/?subject=a&judge=b%00", "judge"),
])
def test_nul_in_a_query_parameter_is_refused_naming_it(annotation, personas, who, url,
                                                       parameter):
    response = client_for(personas[who]).get(url)
    assert response.status_code == 400
    assert parameter in response.json()["detail"] and "NUL" in response.json()["detail"]


def test_nul_in_a_page_query_is_refused_too(annotation, personas, client):
    client.force_login(personas["researcher"])
    client.raise_request_exception = False
    response = client.get("/studies/s1/profiles/corrected/1.vtt?clip=b%00")
    assert response.status_code == 400 and b"clip" in response.content


@pytest.mark.parametrize(("changes", "field"), [
    ({"overview": {"verdict": "reject", "text": "A new\x00 overview"}}, "text"),
    ({"ui_state": {"note": "\x00"}}, "ui_state"),
    ({"telemetry": {"speeds": {"1\x00": 2}}}, "telemetry"),
])
def test_nul_in_a_draft_is_refused_and_nothing_is_written(annotation, personas, changes, field):
    events = AuditEvent.objects.count()
    response = client_for(personas["annotator"]).patch(
        f"/api/annotations/{annotation.pk}/draft/",
        {"base_version": annotation.version, "changes": changes}, format="json")
    assert response.status_code == 400 and field in response.json()["detail"]
    stored = Annotation.objects.get(pk=annotation.pk)
    assert stored.version == annotation.version and stored.ui_state == {}
    assert AuditEvent.objects.count() == events
