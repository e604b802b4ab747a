"""The database refuses what a closed or archived study refuses (migrations annotation 0026 and
0031, scoring 0009), tested with SQL on SQLite and on PostgreSQL: the same statements that a running
study's rows take are refused once it closed, and the failure modes of a taxonomy version in use
refuse any change."""

from __future__ import annotations

import json

import pytest
from django.core.files.base import ContentFile
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from annotation.migrations._study_state_triggers import AUTOSAVED_TABLES
from annotation.models import (
    Annotation,
    Caption,
    FailureMode,
    GuidelineNotice,
    Reference,
    Study,
    TaxonomyVersion,
)
from annotation.services.caption_jobs import caption_import_job_create
from annotation.services.consent import consent_accept, consent_save
from annotation.services.guidelines import guidelines_save
from annotation.services.lifecycle import study_archive, study_close, study_start
from annotation.services.members import invitation_create
from annotation.services.studies import membership_grant, study_create
from annotation.services.taxonomy import taxonomy_default
from annotation.services.workflow import annotations_assign
from tests.annotation.studybuild import caption_record, captions_add, complete, fake_clip

pytestmark = pytest.mark.django_db

MARK = "its rows do not change"
IN_USE = "failure modes are frozen"
F64 = "f" * 64

# For each table: the columns a copied row changes (to stay unique; None: no copy is made), and
# one change of a row.
TABLES = {
    "annotation_membership": {"copy": {"role": "reviewer"}, "change": ("role", "researcher")},
    "annotation_invitation": {"copy": {"token_hash": F64}, "change": ("note", "changed")},
    "annotation_clip": {"copy": {"name": "copy", "sha256": F64}, "change": ("name", "renamed")},
    "annotation_candidatemodel": {"copy": {"name": "Copy", "alias": "Model Z"}, "change": ("name", "Renamed")},
    "annotation_caption": {"copy": {"clip_id": "clip b"}, "change": ("overview", "changed")},
    "annotation_window": {"copy": None, "change": ("scene", "changed")},  # a new one would overlap
    "annotation_reference": {"copy": {"text_sha256": F64}, "change": ("text", "changed")},
    "annotation_captionimportjob": {"copy": {"task_id": "copy"}, "change": ("file_name", "changed")},
    "annotation_annotation": {"copy": {"annotator_id": "researcher"}, "change": ("return_comment", "changed")},
    "annotation_correctionpass": {"copy": None, "change": ("overview_text", "changed")},
    "annotation_windowcorrection": {"copy": None, "change": ("scene", "changed")},
    "annotation_guidelineversion": {"copy": {"number": 2}, "change": ("text", "changed")},
    "annotation_guidelinenotice": {"copy": {"user_id": "researcher"}, "change": ("number", 2)},
    "annotation_consentversion": {"copy": {"number": 2}, "change": ("text", "changed")},
    "annotation_consentrecord": {"copy": {"user_id": "researcher"}, "change": ("number", 2)},
    "scoring_scorejob": {"copy": {"task_id": "copy"}, "change": ("splitter", "redline")},
    "scoring_scoreresult": {"copy": {"item_key": "copy"}, "change": ("value", 0.5)},
    "scoring_externalscore": {"copy": {"source": "copy"}, "change": ("value", 2.0)},
}
# Rows never deleted in any state (migration 0005): their own trigger may answer first.
KEPT = {"annotation_annotation", "annotation_correctionpass"}


def quote(name: str) -> str:
    return connection.ops.quote_name(name)


def copy_row(table: str, pk: int, overrides: dict) -> int:
    """INSERT a copy of row `pk` with `overrides`; the new row's id."""
    with connection.cursor() as cursor:
        columns = [c.name for c in connection.introspection.get_table_description(cursor, table) if c.name != "id"]
        chosen = ", ".join("%s" if c in overrides else quote(c) for c in columns)
        cursor.execute(
            f"INSERT INTO {table} ({', '.join(quote(c) for c in columns)}) SELECT {chosen} FROM {table} WHERE id = %s",
            [overrides[c] for c in columns if c in overrides] + [pk])
        cursor.execute(f"SELECT max(id) FROM {table}")
        return cursor.fetchone()[0]


def change_row(table: str, pk: int, column: str, value) -> None:
    with connection.cursor() as cursor:
        cursor.execute(f"UPDATE {table} SET {quote(column)} = %s WHERE id = %s", [value, pk])


def delete_row(table: str, pk: int) -> None:
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {table} WHERE id = %s", [pk])


def refusal(statement) -> str:
    """What the database answers `statement` (run in its own savepoint), or "" when it passes."""
    try:
        with transaction.atomic():
            statement()
    except IntegrityError as error:
        return str(error)
    return ""


@pytest.fixture
def rows(make_user):
    """A running study with one row in each guarded table; {"study", "pk": {table: id}, ...}."""
    from scoring.models import ExternalScore, ScoreResult
    from scoring.services import score_job_create

    people = {name: make_user(f"t-{name}") for name in ("admin", "annotator", "reviewer", "researcher")}
    study = study_create(slug="t1", name="Trigger study", state="setup")
    for role, person in people.items():
        membership_grant(study=study, user=person, role=role)
    clip_a, clip_b = fake_clip(study, "a"), fake_clip(study, "b")
    captions_add(study, [caption_record("a", "M"), caption_record("b", "M"), caption_record("a", "N")])
    annotations_assign(study=study, annotators=[people["annotator"]], design="clip_blocks")
    reference = Reference.objects.create(clip=clip_a, source="expert", text="A card.", text_sha256="0" * 64)
    invitation = invitation_create(study=study, actor=people["admin"], roles=["reviewer"])[0]
    study_start(study=study, actor=people["admin"])
    caption = Caption.objects.get(clip=clip_a, model__name="N")
    worked = complete(Annotation.objects.filter(caption__clip__study=study).first(), people["annotator"])
    correction = worked.passes.get()
    guidelines, _ = guidelines_save(study=study, actor=people["admin"], text="Read me.")
    consent, _ = consent_save(study=study, actor=people["admin"], text="Do you agree?")
    accepted = consent_accept(study=study, user=people["annotator"], version=consent.number)
    now = timezone.now()
    pk = {
        "annotation_membership": study.memberships.get(user=people["admin"]).pk,
        "annotation_invitation": invitation.pk,
        "annotation_clip": clip_a.pk,
        "annotation_candidatemodel": caption.model_id,
        "annotation_caption": caption.pk,
        "annotation_window": caption.windows.first().pk,
        "annotation_annotation": worked.pk,
        "annotation_correctionpass": correction.pk,
        "annotation_windowcorrection": correction.windows.first().pk,
        "annotation_reference": reference.pk,
        "annotation_guidelineversion": guidelines.pk,
        "annotation_guidelinenotice": GuidelineNotice.objects.get(study=study).pk,
        "annotation_consentversion": consent.pk,
        "annotation_consentrecord": accepted.pk,
        "annotation_captionimportjob": caption_import_job_create(
            study=study, upload=ContentFile(b"{}"), file_name="c.jsonl", enqueue=False).pk,
        "scoring_scorejob": score_job_create(study=study, metrics=["bleu4"], enqueue=False).pk,
        "scoring_scoreresult": ScoreResult.objects.create(
            study=study, caption=caption, subject="caption_vs_reference", item_key="k", metric="bleu4",
            metric_version="1", value=1.0, computed_at=now).pk,
        "scoring_externalscore": ExternalScore.objects.create(
            study=study, caption=caption, metric="m", direction="lower", version="1", source="s", value=1.0,
            imported_at=now).pk,
    }
    return {"study": study, "admin": people["admin"], "pk": pk,
            "values": {"clip b": clip_b.pk, "researcher": people["researcher"].pk}}


def overrides(rows, table: str) -> dict:
    return {c: rows["values"].get(v, v) if isinstance(v, str) else v for c, v in TABLES[table]["copy"].items()}


def test_a_running_studys_rows_take_the_statements(rows):
    """The control: each statement below is one a running study's rows take."""
    for table, pk in rows["pk"].items():
        change_row(table, pk, *TABLES[table]["change"])
        if TABLES[table]["copy"] is not None:
            copied = copy_row(table, pk, overrides(rows, table))
            if table not in KEPT:
                delete_row(table, copied)


@pytest.mark.parametrize("state", ["closed", "archived"])
def test_a_closed_or_archived_studys_rows_refuse_insert_update_and_delete(rows, state):
    study_close(study=rows["study"], actor=rows["admin"], confirm=True)
    if state == "archived":
        study_archive(study=rows["study"], actor=rows["admin"])
    passed = []
    for table, pk in rows["pk"].items():
        statements = [("UPDATE", lambda table=table, pk=pk: change_row(table, pk, *TABLES[table]["change"])),
                      ("DELETE", lambda table=table, pk=pk: delete_row(table, pk))]
        if TABLES[table]["copy"] is not None:
            statements.append(("INSERT", lambda table=table, pk=pk: copy_row(table, pk, overrides(rows, table))))
        for operation, statement in statements:
            answer = refusal(statement)
            # A kept row's own trigger may refuse its deletion first, in any state.
            if not answer or (MARK not in answer and not (operation == "DELETE" and table in KEPT)):
                passed.append(f"{operation} {table}")
    assert not passed, f"The database took these on a {state} study: " + ", ".join(passed)


@pytest.fixture
def closed_study(rows, make_user):
    """A second study, closed, with a membership, a caption and an annotation of its own."""
    annotator = make_user("t-other-annotator")
    other = study_create(slug="t2", name="Closed study", state="setup")
    membership_grant(study=other, user=rows["admin"], role="admin")
    membership_grant(study=other, user=annotator, role="annotator")
    for role in ("reviewer", "researcher"):
        membership_grant(study=other, user=make_user(f"t-other-{role}"), role=role)
    fake_clip(other, "c")
    captions_add(other, [caption_record("c", "M")])
    annotations_assign(study=other, annotators=[annotator], design="clip_blocks")
    study_start(study=other, actor=rows["admin"])
    study_close(study=other, actor=rows["admin"], confirm=True)
    return {"membership": other.memberships.get(user=annotator).pk,
            "clip": Caption.objects.get(clip__study=other).clip_id,
            "caption": Caption.objects.get(clip__study=other).pk,
            "annotation": Annotation.objects.get(caption__clip__study=other).pk,
            "study": other.pk}


def test_a_row_moved_into_or_out_of_a_closed_study_is_refused(rows, closed_study):
    """The guards look at the row before and after: moving a row of a running study into a closed
    one, or a closed study's row out of it, is refused, for each kind of link to the study (its own
    column, a clip, a caption, an annotation)."""
    running = rows["pk"]
    moves = {  # each refused, so that none changes what the next one moves
        "pass into": ("annotation_correctionpass", running["annotation_correctionpass"], "annotation_id",
                      closed_study["annotation"]),
        "membership into": ("annotation_membership", running["annotation_membership"], "study_id",
                            closed_study["study"]),
        "membership out of": ("annotation_membership", closed_study["membership"], "study_id", rows["study"].pk),
        "caption into": ("annotation_caption", running["annotation_caption"], "clip_id", closed_study["clip"]),
        "annotation into": ("annotation_annotation", running["annotation_annotation"], "caption_id",
                            closed_study["caption"]),
        "annotation out of": ("annotation_annotation", closed_study["annotation"], "caption_id",
                              running["annotation_caption"]),
    }
    taken = [name for name, move in moves.items() if MARK not in refusal(lambda move=move: change_row(*move))]
    assert not taken, "The database took these moves: " + ", ".join(taken)


@pytest.mark.postgres
def test_the_postgresql_guards_plan_their_lookups_once():
    """The guards run on every autosave's writes: their lookups are static SQL, which PL/pgSQL plans
    once per connection; an EXECUTE would be planned anew on every row."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT proname, prosrc FROM pg_proc WHERE proname = 'study_state_of' "
                       "OR proname LIKE '%%refuse_when_closed'")
        bodies = dict(cursor.fetchall())
    per_table = {f"{table}_refuse_when_closed" for table, _, _ in AUTOSAVED_TABLES}
    assert set(bodies) == {"study_rows_refuse_when_closed", "work_rows_refuse_when_closed", "study_state_of",
                           *per_table}
    dynamic = [name for name, body in bodies.items() if "EXECUTE" in body.upper()]
    assert not dynamic, f"These guards run dynamic SQL: {dynamic}"


def test_a_closed_studys_clip_still_takes_its_media(rows):
    study_close(study=rows["study"], actor=rows["admin"], confirm=True)
    clip = rows["pk"]["annotation_clip"]
    assert refusal(lambda: change_row("annotation_clip", clip, "poster", "clips/poster/t1/a2.jpg")) == ""
    assert refusal(lambda: change_row("annotation_clip", clip, "media_error", "no proxy")) == ""
    assert MARK in refusal(lambda: change_row("annotation_clip", clip, "manipulated", True))


def test_a_closed_study_row_takes_archiving_and_nothing_else(rows):
    study = rows["study"]
    study_close(study=study, actor=rows["admin"], confirm=True)
    for column, value in (("name", "Renamed"), ("description", "changed"), ("undo_seconds", 30)):
        assert MARK in refusal(lambda column=column, value=value: Study.objects.filter(pk=study.pk).update(
            **{column: value})), column
    Study.objects.filter(pk=study.pk).update(state="archived")
    assert MARK in refusal(lambda: Study.objects.filter(pk=study.pk).update(name="Renamed"))


def test_closing_ends_the_jobs_still_queued_and_writes_its_audit(rows):
    from annotation.models import AuditEvent, CaptionImportJob
    from scoring.models import ScoreJob

    study_close(study=rows["study"], actor=rows["admin"], confirm=True)
    job = ScoreJob.objects.get(pk=rows["pk"]["scoring_scorejob"])
    assert job.status == "failed" and "the study closed before it finished" in job.errors["job"]
    imported = CaptionImportJob.objects.get(pk=rows["pk"]["annotation_captionimportjob"])
    assert imported.state == "failed" and imported.errors == ["the study closed before it finished"]
    assert AuditEvent.objects.filter(study=rows["study"], action="study_close").count() == 1


def mode_statements(mode: FailureMode):
    return (
        ("INSERT", lambda: copy_row("annotation_failuremode", mode.pk, {"key": "copied"})),
        ("UPDATE", lambda: change_row("annotation_failuremode", mode.pk, "definition", "Changed.")),
        ("DELETE", lambda: delete_row("annotation_failuremode", mode.pk)),
    )


def test_the_failure_modes_of_a_taxonomy_in_use_refuse_any_change(rows):
    mode = FailureMode.objects.filter(taxonomy=taxonomy_default()).first()
    taken = [operation for operation, statement in mode_statements(mode) if IN_USE not in refusal(statement)]
    assert not taken, f"The database took {taken} on a mode of a taxonomy in use"


def test_the_failure_modes_of_a_version_not_in_use_take_changes(db):
    version = TaxonomyVersion.objects.create(name="Draft taxonomy", version=1, description="", precedence_rules=[])
    mode = FailureMode.objects.create(taxonomy=version, key="draft", name="Draft", definition="A draft.",
                                      decision_test="Is it a draft?")
    for operation, statement in mode_statements(mode):
        assert refusal(statement) == "", operation


def test_a_version_used_by_a_study_that_left_setup_refuses_changes_even_unfrozen(rows):
    """In use also means: named by a study that started, whether or not anything was assigned."""
    version = TaxonomyVersion.objects.create(name="Late taxonomy", version=1, description="", precedence_rules=[])
    mode = FailureMode.objects.create(taxonomy=version, key="late", name="Late", definition="Late.",
                                      decision_test="Is it late?")
    other = study_create(slug="t2", name="Other", state="setup", taxonomy=version)
    Study.objects.filter(pk=other.pk).update(state="running")
    assert IN_USE in refusal(lambda: change_row("annotation_failuremode", mode.pk, "definition", "Changed."))


def test_a_write_the_database_refuses_answers_409_not_a_server_error(rows, rf):
    """A path whose service forgot to ask the study's state still gets a clear answer: the
    middleware recognises the database's refusal."""
    from annotation.middleware import AnswerWhenAServiceFails

    study_close(study=rows["study"], actor=rows["admin"], confirm=True)
    refused = None
    try:
        with transaction.atomic():
            change_row("annotation_caption", rows["pk"]["annotation_caption"], "overview", "changed")
    except IntegrityError as error:
        refused = error
    assert refused is not None, "the database took the change"
    middleware = AnswerWhenAServiceFails(lambda request: None)
    answer = middleware.process_exception(rf.post("/api/studies/t1/captions/import/"), refused)
    assert answer.status_code == 409
    assert "closed or archived" in json.loads(answer.content)["detail"]
    page = middleware.process_exception(rf.post("/studies/t1/"), refused)
    assert page.status_code == 409 and b"nothing in it changes" in page.content
