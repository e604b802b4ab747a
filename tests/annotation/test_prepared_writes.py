"""Prepared writes (annotation.prepared_writes): each changes what its plain queryset's update()
or Model.save() changes, on the same rows, with the SQL built once per connection and one
statement a call; they refuse what they cannot do. Runs on SQLite and, under `make test`, on
PostgreSQL."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import IntegrityError, connection, transaction
from django.db.models import F
from django.db.models.signals import post_save, pre_save
from django.db.models.sql.compiler import SQLUpdateCompiler
from django.db.transaction import TransactionManagementError
from django.forms.models import model_to_dict
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

import config.urls  # noqa: F401  (every module with a prepared write is loaded)
from annotation.models import Annotation, AuditEvent, CorrectionPass
from annotation.prepared_writes import (
    EVERY_PREPARED_UPDATE,
    PreparedWriteError,
    insert,
    prepared_update,
    save,
)
from annotation.services.guidelines import guidelines_save
from tests.annotation.studybuild import complete

pytestmark = pytest.mark.django_db

UNTRUSTED = {"text": "<script>alert('x')</script> \u00e9\u00e8 \U0001f600", "nested": [1, 2.5, None, {"a": []}]}


def _row(annotation_id: int) -> dict:
    return model_to_dict(Annotation.objects.get(pk=annotation_id))


def _copy(annotation: Annotation, **fields) -> Annotation:
    """Another row like `annotation` (a practice attempt of it, so that they may coexist)."""
    columns = {f.attname: getattr(annotation, f.attname) for f in Annotation._meta.concrete_fields
               if not f.primary_key}
    attempt = Annotation.objects.filter(caption_id=annotation.caption_id).count() + 1
    return Annotation.objects.create(**{**columns, "purpose": Annotation.Purpose.PRACTICE, "attempt": attempt,
                                        **fields})


@pytest.fixture
def calls(annotation, personas) -> dict[str, list[dict]]:
    """For each prepared update, the arguments of calls that change a row: the annotator's
    in-progress item saved with none and with every field an autosave writes, its overview
    locked and submitted (with a return's thread and the undo window, and without: practice); an
    assigned item opened; a submitted item past its undo window claimed by the reviewer, and its
    pass put under the study's newest guidelines."""
    annotator, reviewer = personas["annotator"], personas["reviewer"]
    now = timezone.now()
    working = _copy(annotation, state="in_progress")
    assigned = _copy(annotation, state="assigned")
    locked = _copy(annotation, state="in_progress", overview_locked_at=now)
    submitted = complete(annotation, annotator)
    Annotation.objects.filter(pk=submitted.pk).update(undo_until=None)
    # Guidelines written after it was submitted: its pass is under none, and would be under these.
    study = annotation.caption.clip.study
    guidelines_save(study=study, actor=personas["admin"], text="Correct what is wrong.")
    submitted_pass = CorrectionPass.objects.get(annotation=submitted, kind=CorrectionPass.Kind.ANNOTATOR)
    assert submitted_pass.guideline_version_id is None
    return {
        "_version_bump": [
            {"annotation_id": working.pk, "base_version": working.version, "annotator_id": annotator.pk},
            {"annotation_id": working.pk, "base_version": working.version, "annotator_id": annotator.pk,
             "last_saved_at": now, "ui_state": UNTRUSTED, "telemetry": {"watched_share": 0.5},
             "add_active_seconds": 12.5, "active_until": now + timedelta(seconds=3)},
        ],
        "_open_update": [{"annotation_id": assigned.pk, "now": now}],
        "_claim_write": [{"annotation_id": submitted.pk, "reviewer_id": reviewer.pk, "now": now,
                          "expires": now + timedelta(minutes=30)}],
        "_lock_update": [{"annotation_id": working.pk, "now": now, "undo_until": now + timedelta(seconds=30),
                          "undo": {"action": "lock_overview", "actor": annotator.pk, "before": {}}}],
        "_guidelines_update": [{"correction_pass_id": submitted_pass.pk, "study_id": study.pk}],
        "_submit_update": [
            {"annotation_id": locked.pk, "now": now, "returned_units": []},  # practice: no undo
            {"annotation_id": locked.pk, "now": now, "returned_units": [{"unit": "overview", **UNTRUSTED}],
             "undo_until": now + timedelta(seconds=30),
             "undo": {"action": "submit", "actor": annotator.pk, "before": {"return_comment": "Fix it."}}},
        ],
    }


def test_every_prepared_update_changes_what_its_queryset_changes(calls):
    names = {update.build.__name__ for update in EVERY_PREPARED_UPDATE
             if not update.build.__module__.startswith("tests.")}
    assert names == set(calls), "each prepared update needs its arguments here"
    for update in EVERY_PREPARED_UPDATE:
        for arguments in calls.get(update.build.__name__, []):
            rows, values = update.queryset(**arguments)
            key = "annotation_id" if "annotation_id" in arguments else "correction_pass_id"

            def row():
                return model_to_dict(rows.model.objects.get(pk=arguments[key]))  # noqa: B023

            before = row()
            with transaction.atomic():
                assert rows.update(**values) == 1, update
                plain = row()
                transaction.set_rollback(True)
            assert row() == before != plain, update
            for _ in range(2):  # built on the first call, reused on the second
                with transaction.atomic():
                    assert update(**arguments) == 1, update
                    assert row() == plain, update
                    transaction.set_rollback(True)
            stale = {**arguments, key: arguments[key] + 10_000}
            assert update(**stale) == 0


def test_the_version_bump_writes_json_and_adds_numbers_as_given(calls):
    arguments = calls["_version_bump"][1]
    before = Annotation.objects.get(pk=arguments["annotation_id"])
    from annotation.services.annotation_common import _version_bump

    assert _version_bump(**arguments) == 1
    after = Annotation.objects.get(pk=arguments["annotation_id"])
    assert after.ui_state == UNTRUSTED and after.telemetry == {"watched_share": 0.5}
    assert after.active_seconds == pytest.approx(before.active_seconds + 12.5)
    assert after.version == before.version + 1 and after.active_until == arguments["active_until"]
    # Based on the old version now: changes nothing.
    assert _version_bump(**arguments) == 0


def test_an_update_is_built_once_and_runs_as_one_statement(annotation, monkeypatch):
    @prepared_update
    def rename(*, annotation_id: int, comment: str):
        return Annotation.objects.filter(pk=annotation_id), {"return_comment": comment, "version": F("version") + 1}

    version = annotation.version
    built = []
    original = SQLUpdateCompiler.as_sql
    monkeypatch.setattr(SQLUpdateCompiler, "as_sql", lambda self, *a, **k: built.append(1) or original(self, *a, **k))
    assert rename(annotation_id=annotation.pk, comment="first") == 1
    assert built
    built.clear()
    with CaptureQueriesContext(connection) as queries:
        assert rename(annotation_id=annotation.pk, comment="second") == 1
        assert rename(annotation_id=annotation.pk + 999, comment="third") == 0
    assert built == [] and len(queries) == 2
    annotation.refresh_from_db()
    assert annotation.return_comment == "second" and annotation.version == version + 2
    assert rename(annotation_id=2**70, comment="no such row") == 0


def test_what_a_prepared_update_refuses(annotation):
    @prepared_update
    def ignores(*, annotation_id: int):
        return Annotation.objects.filter(state="in_progress"), {"return_comment": "x"}

    with pytest.raises(PreparedWriteError, match=r"does not use \['annotation_id'\] as they are given"):
        ignores(annotation_id=annotation.pk)

    @prepared_update
    def json_in_where(*, telemetry: dict):
        return Annotation.objects.filter(telemetry=telemetry), {"return_comment": "x"}

    with pytest.raises(PreparedWriteError, match="only a new value of a column"):
        json_in_where(telemetry={"a": 1})

    @prepared_update
    def comment(*, annotation_id: int, text: str):
        return Annotation.objects.filter(pk=annotation_id), {"return_comment": text}

    for wrong in (True, None, object()):
        with pytest.raises(PreparedWriteError, match="must be an id, a key, an aware time, a number or a JSON"):
            comment(annotation_id=annotation.pk, text=wrong)


def test_insert_makes_the_row_save_makes(annotation, personas):
    study_id = annotation.caption.clip.study_id
    made = AuditEvent(study_id=study_id, annotation=annotation, actor=personas["annotator"], action="save",
                      before={"overview": "old"}, after=UNTRUSTED)
    insert(made)
    assert made.pk is not None and not made._state.adding
    plain = AuditEvent(study_id=study_id, annotation=annotation, actor=personas["annotator"], action="save",
                       before={"overview": "old"}, after=UNTRUSTED)
    plain.save()
    stored, expected = (model_to_dict(AuditEvent.objects.get(pk=pk), exclude=["id", "at"])
                        for pk in (made.pk, plain.pk))
    assert stored == expected
    assert AuditEvent.objects.get(pk=made.pk).at == made.at  # auto_now_add, as kept on the instance
    # Empty links (no annotation, no actor) are parameters like any other value.
    insert(AuditEvent(study_id=study_id, annotation=None, actor=None, action="note"))
    assert AuditEvent.objects.filter(action="note", annotation=None, actor=None).count() == 1
    with pytest.raises(PreparedWriteError, match="makes a new AuditEvent"):
        insert(made)


def test_save_writes_every_column_as_save_does(annotation, personas):
    correction = CorrectionPass.objects.get(annotation=annotation, kind=CorrectionPass.Kind.ANNOTATOR)
    updated = correction.updated_at
    correction.overview_verdict, correction.overview_text = "reject", UNTRUSTED["text"]
    correction.overview_modes = ["hallucinated_object"]
    assert correction.guideline_version_id is None  # a column written as NULL: its own statement
    save(correction)
    stored = CorrectionPass.objects.get(pk=correction.pk)
    assert model_to_dict(stored) == model_to_dict(correction)
    assert stored.updated_at == correction.updated_at > updated  # auto_now
    from annotation.services.guidelines import guidelines_save

    version, _ = guidelines_save(study=annotation.caption.clip.study, actor=personas["admin"], text="Be exact.")
    correction.guideline_version_id = version.pk
    save(correction)
    assert CorrectionPass.objects.get(pk=correction.pk).guideline_version_id == version.pk
    correction.pk += 10_000  # a row that is not there (passes are never deleted)
    with pytest.raises(CorrectionPass.DoesNotExist, match="no longer there"):
        save(correction)


def test_no_signal_receiver_is_connected_to_a_model_written_here():
    """Prepared writes send no pre_save or post_save: a receiver connected later would miss them."""
    for model in (Annotation, AuditEvent, CorrectionPass):
        assert not pre_save.has_listeners(model) and not post_save.has_listeners(model), model


def test_a_failed_write_marks_its_transaction_for_rollback(annotation):
    """As after a failed update() or save(): the caller that catches the error writes no more in it."""

    @prepared_update
    def set_purpose(*, annotation_id: int, purpose: str):
        return Annotation.objects.filter(pk=annotation_id), {"purpose": purpose}

    with transaction.atomic():
        with pytest.raises(IntegrityError, match="annotation_purpose_known"):
            set_purpose(annotation_id=annotation.pk, purpose="unknown")
        with pytest.raises(TransactionManagementError, match="until the end of the 'atomic' block"):
            Annotation.objects.count()
    assert Annotation.objects.get(pk=annotation.pk).purpose == Annotation.Purpose.WORK
