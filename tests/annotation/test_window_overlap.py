"""A pass's corrected windows never overlap: the service refuses it by name (for the annotator's
autosave and QC's amendments alike), the database refuses a raw write, and a command lists the
passes stored with overlaps before."""

from io import StringIO

import pytest
from django.core.management import call_command
from django.db import IntegrityError, transaction
from rest_framework.test import APIClient

from annotation.errors import ServiceError
from annotation.models import Annotation, CorrectionPass, WindowCorrection
from annotation.services.workflow import (
    annotation_save,
    annotation_submit,
    overview_lock,
    review_amend,
    review_claim,
)

pytestmark = pytest.mark.django_db

# The caption's windows (tests/conftest.py CAPTION_B): 0-2, 2-4, 4-6 s.


def save(annotation, actor, **changes):
    return annotation_save(annotation_id=annotation.pk, actor=actor, base_version=annotation.version, changes=changes)


@pytest.fixture
def locked(annotation, personas):
    annotation = save(annotation, personas["annotator"], overview={"verdict": "accept"})
    return overview_lock(annotation_id=annotation.pk, actor=personas["annotator"], base_version=annotation.version)


def stored_windows(annotation, kind="annotator"):
    return list(
        WindowCorrection.objects.filter(correction_pass__annotation=annotation, correction_pass__kind=kind)
        .order_by("window__index").values_list("window__index", "verdict", "start", "end")
    )


def test_a_draft_retiming_a_window_over_its_neighbour_is_refused_naming_both(locked, personas):
    client = APIClient()
    client.force_authenticate(personas["annotator"])
    answer = client.patch(f"/api/annotations/{locked.pk}/draft/", {
        "base_version": locked.version,
        "changes": {"windows": [{"index": 0, "verdict": "reject", "end": 3.0, "modes": ["temporal"]},
                                {"index": 1, "verdict": "accept"}]},
    }, format="json")
    assert answer.status_code == 400, answer.content
    text = str(answer.json())
    assert "Window 1 (0.00–3.00 s) overlaps window 2 (2.00–4.00 s)" in text
    assert stored_windows(locked) == []
    assert Annotation.objects.get(pk=locked.pk).version == locked.version


def test_a_window_moved_over_an_earlier_one_is_refused_too(locked, personas):
    with pytest.raises(ServiceError, match=r"Window 2 \(2\.00–4\.00 s\) overlaps window 3 \(3\.50–6\.00 s\)"):
        save(locked, personas["annotator"], windows=[{"index": 2, "verdict": "reject", "start": 3.5}])


def test_a_shared_boundary_moved_in_one_save_is_stored_whichever_way_it_moves(locked, personas):
    annotator = personas["annotator"]
    later = [{"index": 0, "verdict": "reject", "end": 2.5, "modes": ["temporal"]},
             {"index": 1, "verdict": "reject", "start": 2.5, "modes": ["temporal"]}]
    annotation = save(locked, annotator, windows=later)
    assert stored_windows(annotation) == [(0, "reject", 0.0, 2.5), (1, "reject", 2.5, 4.0)]
    # Back the other way, past the original boundary, then a whole window shifted with its neighbours.
    annotation = save(annotation, annotator, windows=[{"index": 0, "end": 1.5}, {"index": 1, "start": 1.5}])
    assert stored_windows(annotation) == [(0, "reject", 0.0, 1.5), (1, "reject", 1.5, 4.0)]
    annotation = save(annotation, annotator, windows=[
        {"index": 1, "start": 2.5, "end": 4.5},
        {"index": 2, "verdict": "reject", "start": 4.5, "modes": ["temporal"]},
        {"index": 0, "end": 2.5},
    ])
    assert stored_windows(annotation) == [(0, "reject", 0.0, 2.5), (1, "reject", 2.5, 4.5), (2, "reject", 4.5, 6.0)]


@pytest.mark.parametrize("kind", ["annotator", "qc"])
def test_the_database_refuses_overlapping_corrections_written_directly(locked, personas, kind):
    correction, _ = CorrectionPass.objects.get_or_create(
        annotation=locked, kind=kind, defaults={"author": personas["reviewer"]}
    )
    first, second, _third = locked.caption.windows.order_by("index")
    with pytest.raises(IntegrityError, match="overlaps"), transaction.atomic():
        WindowCorrection.objects.create(correction_pass=correction, window=first, verdict="reject",
                                        start=0.0, end=2.5, modes=["temporal"])
    row = WindowCorrection.objects.create(correction_pass=correction, window=second, verdict="reject",
                                          start=2.5, end=4.0, modes=["temporal"])
    with pytest.raises(IntegrityError, match="overlaps"), transaction.atomic():
        WindowCorrection.objects.filter(pk=row.pk).update(start=1.5)
    with pytest.raises(IntegrityError, match="overlaps"), transaction.atomic():
        WindowCorrection.objects.filter(pk=row.pk).update(end=4.5)
    WindowCorrection.objects.create(correction_pass=correction, window=first, verdict="reject",
                                    start=0.0, end=2.5, modes=["temporal"])
    assert stored_windows(locked, kind) == [(0, "reject", 0.0, 2.5), (1, "reject", 2.5, 4.0)]


def submitted(locked, personas):
    annotator = personas["annotator"]
    annotation = save(locked, annotator, windows=[{"index": i, "verdict": "accept"} for i in range(3)],
                      segmentation={"verdict": "accept"})
    return annotation_submit(annotation_id=annotation.pk, actor=annotator, base_version=annotation.version)


def test_a_qc_amendment_that_overlaps_is_refused_and_nothing_is_stored(locked, personas):
    annotation = submitted(locked, personas)
    reviewer = personas["reviewer"]
    review_claim(annotation_id=annotation.pk, actor=reviewer)
    with pytest.raises(ServiceError, match=r"Window 2 \(2\.00–4\.50 s\) overlaps window 3"):
        review_amend(annotation_id=annotation.pk, actor=reviewer, changes={
            "windows": [{"index": 1, "verdict": "reject", "end": 4.5, "modes": ["temporal"]}],
        })
    assert not CorrectionPass.objects.filter(annotation=annotation, kind="qc").exists()


def test_the_command_lists_passes_stored_with_overlapping_windows(locked, personas, study):
    annotation = submitted(locked, personas)
    clean = StringIO()
    call_command("list_overlapping_windows", "--study", study.slug, stdout=clean)
    assert "No pass of study 's1' has overlapping windows." in clean.getvalue()
    # As stored before overlaps were refused: the trigger is set aside for this one write.
    row = WindowCorrection.objects.get(correction_pass__annotation=annotation, window__index=0)
    with _without_overlap_triggers():
        WindowCorrection.objects.filter(pk=row.pk).update(verdict="reject", end=3.0, modes=["temporal"])
    out = StringIO()
    call_command("list_overlapping_windows", "--study", study.slug, stdout=out)
    lines = out.getvalue().splitlines()
    assert lines[0] == (
        f"annotation {annotation.pk} (submitted, annotator annotator, annotator pass): Window 1 "
        "(0.00–3.00 s) overlaps window 2 (2.00–4.00 s): a window must end at or before the next one "
        f"starts. Review: /review/{annotation.pk}/"
    )
    assert lines[1].startswith("1 passes of study 's1' have overlapping windows")


class _without_overlap_triggers:
    """Set migration 0016's triggers aside inside the test's transaction, then put them back."""

    def __enter__(self):
        from django.db import connection

        self.connection = connection
        with connection.cursor() as cursor:
            if connection.vendor == "postgresql":
                # Triggers do not fire for a replica's writes (no ALTER TABLE inside a transaction
                # that has deferred foreign key checks pending).
                cursor.execute("SET session_replication_role = replica")
            else:
                cursor.execute("DROP TRIGGER annotation_windowcorrection_timeline_update")

    def __exit__(self, *exc):
        from annotation.migrations._sqlite_triggers import WINDOW_CORRECTION_SQLITE

        with self.connection.cursor() as cursor:
            if self.connection.vendor == "postgresql":
                cursor.execute("SET session_replication_role = DEFAULT")
            else:
                cursor.execute(WINDOW_CORRECTION_SQLITE[1])


# --------------------------------------------------------------------------- segmentation rows
# A rejected segmentation's corrected windows: a JSON list on the pass (migration 0024).

OVERLAPPING = '[{"start": 0, "end": 6, "scene": "", "shot": ""}, {"start": 4, "end": 10, "scene": "", "shot": ""}]'
TOUCHING = '[{"start": 0, "end": 4, "scene": "", "shot": ""}, {"start": 4, "end": 6, "scene": "", "shot": ""}]'


def _pass_sql(annotation, author, kind: str, windows: str) -> None:
    """INSERT a correction pass with `windows` as its corrected segmentation, in plain SQL."""
    from django.db import connection

    json_value = "%s::jsonb" if connection.vendor == "postgresql" else "%s"
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO annotation_correctionpass (annotation_id, kind, author_id, overview_verdict, "
            "overview_text, overview_modes, segmentation_verdict, segmentation_modes, corrected_windows, "
            f"updated_at) VALUES (%s, %s, %s, '', '', '[]', 'reject', '[\"temporal\"]', {json_value}, "
            "CURRENT_TIMESTAMP)",
            [annotation.pk, kind, author.pk, windows],
        )


def _update_sql(pass_id: int, windows: str) -> None:
    from django.db import connection

    json_value = "%s::jsonb" if connection.vendor == "postgresql" else "%s"
    with connection.cursor() as cursor:
        cursor.execute(f"UPDATE annotation_correctionpass SET corrected_windows = {json_value} WHERE id = %s",
                       [windows, pass_id])


def test_the_database_refuses_overlapping_segmentation_rows_written_in_sql(locked, personas):
    with pytest.raises(IntegrityError, match="overlaps"), transaction.atomic():
        _pass_sql(locked, personas["reviewer"], "qc", OVERLAPPING)
    assert not CorrectionPass.objects.filter(annotation=locked, kind="qc").exists()
    _pass_sql(locked, personas["reviewer"], "qc", TOUCHING)  # one ends where the next starts
    stored = CorrectionPass.objects.get(annotation=locked, kind="qc")
    assert [(w["start"], w["end"]) for w in stored.corrected_windows] == [(0, 4), (4, 6)]
    with pytest.raises(IntegrityError, match="overlaps"), transaction.atomic():
        _update_sql(stored.pk, OVERLAPPING)
    stored.refresh_from_db()
    assert [(w["start"], w["end"]) for w in stored.corrected_windows] == [(0, 4), (4, 6)]


def test_the_database_refuses_overlapping_segmentation_rows_through_the_orm(locked):
    correction = CorrectionPass.objects.get(annotation=locked, kind="annotator")
    with pytest.raises(IntegrityError, match="overlaps"), transaction.atomic():
        CorrectionPass.objects.filter(pk=correction.pk).update(
            segmentation_verdict="reject", segmentation_modes=["temporal"],
            corrected_windows=[{"start": 0, "end": 6}, {"start": 4, "end": 10}])


def test_the_command_lists_passes_with_overlapping_segmentation_rows(locked, personas, study):
    correction = CorrectionPass.objects.get(annotation=locked, kind="annotator")
    with _without_segmentation_triggers():
        _update_sql(correction.pk, OVERLAPPING)
    out = StringIO()
    call_command("list_overlapping_windows", "--study", study.slug, stdout=out)
    lines = out.getvalue().splitlines()
    assert lines[0] == (
        f"annotation {locked.pk} (in_progress, annotator annotator, annotator pass): Corrected segmentation: "
        "Window 1 (0.00–6.00 s) overlaps window 2 (4.00–10.00 s): a window must end at or before the next "
        f"one starts. Review: /review/{locked.pk}/"
    )
    assert lines[1].startswith("1 passes of study 's1' have overlapping windows")


class _without_segmentation_triggers:
    """Set migration 0024's segmentation trigger aside inside the test's transaction."""

    def __enter__(self):
        from django.db import connection

        self.connection = connection
        with connection.cursor() as cursor:
            if connection.vendor == "postgresql":
                cursor.execute("SET session_replication_role = replica")
            else:
                cursor.execute("DROP TRIGGER annotation_correctionpass_segmentation_update")

    def __exit__(self, *exc):
        import importlib

        migration = importlib.import_module("annotation.migrations.0024_active_time_and_segmentation_overlap")
        with self.connection.cursor() as cursor:
            if self.connection.vendor == "postgresql":
                cursor.execute("SET session_replication_role = DEFAULT")
            else:
                cursor.execute(migration.SQLITE[1])
