"""The API schema is the contract: every endpoint answers what /api/schema/ says, never a 500.

schemathesis reads the schema the server publishes and sends every operation requests
generated from it (valid ones and, through Hypothesis, odd ones: long strings, deep lists,
unusual characters), as a study admin and as an annotator, and checks each answer: no server
error, a status code the schema documents, the documented content type and a body matching
the documented schema. Path parameters point at a real study and annotation half of the time,
so that the generated bodies reach the services instead of stopping at a 404.
"""

from __future__ import annotations

import pytest
import schemathesis
from django.core.management import call_command
from hypothesis import HealthCheck, Phase, settings
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)

pytestmark = pytest.mark.django_db

# Examples per operation and persona: enough to find a missing check, small enough for `make test`
# (about a minute for the whole API).
EXAMPLES = 12
CSRF_SECRET = "a" * 32
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance,
          response_schema_conformance]


def test_the_schema_generates_without_a_warning(tmp_path):
    """Every view declares its request and answers: drf-spectacular guesses nothing."""
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(tmp_path / "s.yaml"))


def published_schema():
    """The schema as the server publishes it at /api/schema/ (read without a database)."""
    from django.core.wsgi import get_wsgi_application

    return schemathesis.openapi.from_wsgi("/api/schema/", get_wsgi_application()).exclude(
        # Scoring a study runs its jobs; the job API is tested in tests/scoring_jobs.
        method="POST", path="/api/studies/{slug}/score-jobs/",
    )


schema = published_schema()


@pytest.fixture(autouse=True)
def keep_the_test_connection():
    """Schemathesis calls the WSGI application directly, not through Django's test client, so each
    request's request_started and request_finished signals would close the database connection
    that holds the test's transaction (PostgreSQL then fails with "the connection is closed").
    Django's own test client disconnects the same handler while it runs a request."""
    from django.core.signals import request_finished, request_started
    from django.db import close_old_connections

    for signal in (request_started, request_finished):
        signal.disconnect(close_old_connections)
    yield
    for signal in (request_started, request_finished):
        signal.connect(close_old_connections)


@pytest.fixture
def annotation(study, personas):
    """The annotator's annotation of a caption of a stand-in clip (no video is encoded)."""
    from annotation.services.workflow import annotation_open, annotations_assign
    from tests.annotation.studybuild import caption_record, captions_add, fake_clip

    fake_clip(study, "b")
    [caption] = captions_add(study, [caption_record("b")])
    annotations_assign(study=study, annotators=[personas["annotator"]], captions=[caption])
    return annotation_open(annotation=caption.annotations.get(), actor=personas["annotator"])


@pytest.fixture
def signed_in(annotation, personas):
    """Request headers of a signed-in session (with its CSRF token), by persona."""
    from django.test import Client

    headers = {}
    for name in ("admin", "annotator"):
        client = Client()
        client.force_login(personas[name])
        session = client.cookies["sessionid"].value
        headers[name] = {"Cookie": f"sessionid={session}; csrftoken={CSRF_SECRET}",
                         "X-CSRFToken": CSRF_SECRET}
    return headers


def aim_at_real_objects(case, annotation) -> None:
    """Point half of the cases at the study and annotation the fixtures built."""
    parameters = case.path_parameters or {}
    if "slug" in parameters:
        parameters["slug"] = "s1"
    if isinstance(parameters.get("annotation_id"), int) and parameters["annotation_id"] % 2 == 0:
        parameters["annotation_id"] = annotation.pk


BOUNDED = settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
                   phases=[Phase.explicit, Phase.generate],
                   suppress_health_check=list(HealthCheck))


@schema.parametrize()
@BOUNDED
def test_every_endpoint_keeps_to_the_schema_for_a_study_admin(case, signed_in, annotation):
    aim_at_real_objects(case, annotation)
    case.call_and_validate(headers=signed_in["admin"], checks=CHECKS)


@schema.parametrize()
@BOUNDED
def test_every_endpoint_keeps_to_the_schema_for_an_annotator(case, signed_in, annotation):
    aim_at_real_objects(case, annotation)
    case.call_and_validate(headers=signed_in["annotator"], checks=CHECKS)
