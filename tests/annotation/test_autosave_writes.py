"""An autosave writes what it must and nothing more: one versioned UPDATE of the annotation
(carrying the view state, active time and telemetry), the pass when it changed, one audit event."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotation.models import Annotation, AuditEvent
from annotation.services.workflow import annotation_open, annotation_save

pytestmark = pytest.mark.django_db


def writes(annotation, actor, changes) -> tuple[list[str], Annotation]:
    with CaptureQueriesContext(connection) as captured:
        saved = annotation_save(
            annotation_id=annotation.pk, actor=actor, base_version=annotation.version, changes=changes
        )
    statements = [q["sql"].split()[0].upper() for q in captured.captured_queries]
    return [s for s in statements if s in ("INSERT", "UPDATE", "DELETE")], saved


def test_a_save_of_view_state_time_and_telemetry_is_one_update(annotation, personas):
    annotator = personas["annotator"]
    annotation = annotation_open(annotation=annotation, actor=annotator)
    changes = {"ui_state": {"unit": 2}, "active_seconds": 4, "telemetry": {"watched_share": 0.5}}
    done, saved = writes(annotation, annotator, changes)
    assert done == ["UPDATE"]
    stored = Annotation.objects.get(pk=annotation.pk)
    assert (saved.version, saved.ui_state, saved.active_seconds, saved.telemetry) == (
        stored.version, stored.ui_state, stored.active_seconds, stored.telemetry,
    ) == (annotation.version + 1, {"unit": 2}, annotation.active_seconds + 4, {"watched_share": 0.5})


def test_a_save_of_an_overview_edit_is_one_update_the_pass_and_one_audit_event(annotation, personas):
    annotator = personas["annotator"]
    annotation = annotation_open(annotation=annotation, actor=annotator)
    events = AuditEvent.objects.count()
    changes = {"overview": {"verdict": "reject", "text": "Something else.", "modes": ["factual"]},
               "ui_state": {"unit": 0}, "active_seconds": 2, "telemetry": {"seeks": 3}}
    done, saved = writes(annotation, annotator, changes)
    assert done == ["UPDATE", "UPDATE", "INSERT"]  # the annotation, its pass, the audit event
    assert AuditEvent.objects.count() == events + 1
    assert saved.telemetry == {"seeks": 3}
