"""A client that cuts its request mid-body (the soak's disconnect fault) gets a 400, not a
server error: nobody reads the answer, but the log must not report a 500 that no one saw."""

from __future__ import annotations

import json

import pytest

from annotation.models import AuditEvent

pytestmark = pytest.mark.django_db


class CutBody:
    """A request body whose connection broke before it arrived whole: reading it fails, as
    gunicorn's reader does (its NoMoreData is an OSError)."""

    def read(self, size: int = -1) -> bytes:
        raise OSError("connection reset by peer")

    readline = read


@pytest.mark.parametrize("path", ["/api/edit-size/", "/studies/s1/profiles/jobs/"])
def test_a_body_cut_short_is_answered_400_and_stores_nothing(client, personas, study, path):
    client.force_login(personas["admin"])
    body = json.dumps({"slug": "cut", "title": "Cut short", "resamples": 30}).encode()
    events = AuditEvent.objects.count()
    response = client.post(path, content_type="application/json", CONTENT_LENGTH=str(len(body)),
                           **{"wsgi.input": CutBody()})
    assert response.status_code == 400
    assert "could not be read to its end" in response.json()["detail"]
    assert AuditEvent.objects.count() == events
