"""An autosave writes what it must and nothing more: one versioned UPDATE of the annotation
(carrying the view state, active time and telemetry), the pass when it changed, one audit event."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotation.models import Annotation, AuditEvent, WindowCorrection
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


def locked(annotation, annotator) -> Annotation:
    """The annotation with its overview accepted and locked: the window pass is open."""
    from annotation.services.workflow import overview_lock

    saved = annotation_save(annotation_id=annotation.pk, actor=annotator, base_version=annotation.version,
                            changes={"overview": {"verdict": "accept"}})
    return overview_lock(annotation_id=annotation.pk, actor=annotator, base_version=saved.version)


def test_a_save_of_every_window_writes_them_in_one_statement_whatever_their_number(annotation, personas):
    annotator = personas["annotator"]
    annotation = locked(annotation, annotator)
    count = annotation.caption.windows.count()
    assert count >= 3
    judged = [{"index": i, "verdict": "reject", "scene": f"Scene {i} as it is.", "modes": ["factual"]}
              for i in range(count)]
    done, saved = writes(annotation, annotator, {"windows": judged})
    # the annotation, every window correction at once, the pass, the audit event
    assert done == ["UPDATE", "INSERT", "UPDATE", "INSERT"]
    again = [{"index": i, "scene": f"Scene {i}, corrected again."} for i in range(count)]
    done, saved = writes(saved, annotator, {"windows": again})
    assert done == ["UPDATE", "UPDATE", "UPDATE", "INSERT"]
    rows = annotation.passes.get(kind="annotator").windows.order_by("window__index")
    assert [(r.verdict, r.scene, r.modes) for r in rows] == [
        ("reject", f"Scene {i}, corrected again.", ["factual"]) for i in range(count)
    ]


def test_the_answer_to_a_save_is_the_pass_as_stored(annotation, personas, client):
    """The autosave's answer is made from the pass as just written, not read back: it must
    be exactly what a fresh read gives (the workspace merges concurrent edits against it)."""
    from annotation.services.workflow import annotation_snapshot

    annotator = personas["annotator"]
    annotation = locked(annotation, annotator)
    client.force_login(annotator)
    changes = {"windows": [{"index": 1, "verdict": "reject", "shot": "Wide shot.", "start": 2.5}],
               "segmentation": {"verdict": "reject", "modes": []}}
    answer = client.patch(f"/api/annotations/{annotation.pk}/draft/",
                          {"base_version": annotation.version, "changes": changes},
                          content_type="application/json").json()
    fresh = annotation_snapshot(Annotation.objects.get(pk=annotation.pk))
    assert answer["annotator_pass"] == fresh["annotator_pass"]
    assert answer["annotator_pass"]["windows"][0]["shot"] == "Wide shot."
    assert answer["version"] == fresh["version"]


def test_a_save_reads_the_passes_once_and_answers_them_as_stored(annotation, personas, client):
    """The passes are read with the annotation, in the statement that checks the save may be made
    (none reads them apart); the answer's snapshot shows the passes from that read and from the
    save itself, never an older copy: it equals a fresh read, a QC pass included (made here by
    hand: the workflow makes one only on approval)."""
    from annotation.models import CorrectionPass
    from annotation.services.workflow import annotation_snapshot

    annotator = personas["annotator"]
    annotation = annotation_open(annotation=annotation, actor=annotator)
    first = annotation_save(annotation_id=annotation.pk, actor=annotator, base_version=annotation.version,
                            changes={"overview": {"verdict": "reject", "text": "First.", "modes": ["factual"]}})
    CorrectionPass.objects.create(annotation_id=annotation.pk, kind=CorrectionPass.Kind.QC,
                                  author=personas["reviewer"], overview_text="The reviewer's text.")
    client.force_login(annotator)
    with CaptureQueriesContext(connection) as captured:
        answer = client.patch(f"/api/annotations/{annotation.pk}/draft/",
                              {"base_version": first.version, "changes": {"overview": {"text": "Second."}}},
                              content_type="application/json")
    assert answer.status_code == 200
    reads = [q["sql"] for q in captured.captured_queries
             if q["sql"].startswith("SELECT") and '"annotation_correctionpass"' in q["sql"]]
    assert len(reads) == 1, reads
    assert 'FROM "annotation_annotation"' in reads[0] and "LEFT OUTER JOIN \"annotation_correctionpass\"" in reads[0]
    fresh = annotation_snapshot(Annotation.objects.get(pk=annotation.pk))
    body = answer.json()
    assert body["annotator_pass"] == fresh["annotator_pass"]
    assert body["annotator_pass"]["overview"]["text"] == "Second."
    assert body["qc_pass"] == fresh["qc_pass"]
    assert body["qc_pass"]["overview"]["text"] == "The reviewer's text."
    assert body["version"] == fresh["version"] == first.version + 1



def test_an_autosave_builds_no_sql_once_each_kind_of_save_was_made(annotation, personas, monkeypatch):
    """Building a statement's SQL costs more CPU than running it. An autosave's statements (the
    claim read, the windows and the pass's rows, the version's UPDATE, a window's INSERT or
    UPDATE, the pass's UPDATE, the audit event) are built once per connection and kind of save
    (the version's UPDATE, with active time or without): once an overview edit and a window's
    first and second save were made, no save builds SQL again."""
    from django.db.models.sql import compiler

    from annotation.services.workflow import overview_lock

    annotator = personas["annotator"]

    def save(item, **changes):
        return annotation_save(annotation_id=item.pk, actor=annotator, base_version=item.version, changes=changes)

    annotation = save(annotation, overview={"verdict": "reject", "text": "First.", "modes": ["factual"]})
    annotation = save(annotation, overview={"text": "Second."})
    annotation = overview_lock(annotation_id=annotation.pk, actor=annotator, base_version=annotation.version)
    annotation = save(annotation, windows=[{"index": 0, "verdict": "accept"}], active_seconds=1)
    annotation = save(annotation, windows=[{"index": 0, "verdict": "reject", "scene": "A bus.", "modes": ["factual"]}])
    built = []
    for kind in (compiler.SQLCompiler, compiler.SQLInsertCompiler, compiler.SQLUpdateCompiler):
        original = kind.as_sql
        monkeypatch.setattr(kind, "as_sql", lambda self, *a, _original=original, **k: built.append(
            type(self).__name__) or _original(self, *a, **k))
    annotation = save(annotation, windows=[{"index": 1, "verdict": "accept"}], active_seconds=2)
    annotation = save(annotation, windows=[{"index": 1, "verdict": "reject", "shot": "Close.", "modes": ["factual"]}])
    annotation = save(annotation, windows=[{"index": 2, "verdict": "accept"}])
    assert built == []
    stored = {row.window.index: row for row in WindowCorrection.objects.filter(
        correction_pass__annotation=annotation).select_related("window")}
    assert sorted(stored) == [0, 1, 2]
    assert (stored[1].verdict, stored[1].shot, stored[1].modes) == ("reject", "Close.", ["factual"])
    assert (stored[0].verdict, stored[0].scene) == ("reject", "A bus.")
