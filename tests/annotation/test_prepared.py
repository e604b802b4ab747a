"""Prepared reads (annotation.prepared): each gives what its plain queryset gives, on the same
rows, with the SQL built once per connection and one statement a call; they refuse what they
cannot do. Runs on SQLite and, under `make test`, on PostgreSQL."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from django.db import connection, transaction
from django.db.models import Exists, OuterRef
from django.db.models.functions import Now
from django.db.models.sql.compiler import SQLCompiler
from django.db.transaction import TransactionManagementError
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

import config.auth  # noqa: F401
import config.urls  # noqa: F401  (every module with a prepared read is loaded)
from annotation.models import (
    Annotation,
    Caption,
    CorrectionPass,
    GoldItem,
    Membership,
    Participant,
    Qualification,
    RecruitmentLink,
    Withdrawal,
)
from annotation.prepared import EVERY_PREPARED_READ, PreparedRead, PreparedReadError, prepared
from annotation.services.captions import captions_import_jsonl
from annotation.services.consent import consent_accept, consent_save
from annotation.services.guidelines import guidelines_save
from annotation.services.workflow import annotation_open, annotations_assign
from config.sessions import SessionStore
from tests.annotation.studybuild import complete
from tests.conftest import CAPTION_B, jsonl

pytestmark = pytest.mark.django_db

CAPTION_A = {**CAPTION_B, "clip": "a", "windows": CAPTION_B["windows"][:2]}  # clip a is 4 s long


def as_data(value, depth: int = 0):
    """A model instance as plain data: its fields, its annotations and the relations
    select_related filled in (compared recursively); other values as they are."""
    if not hasattr(value, "_state"):
        return value
    data = {name: item for name, item in vars(value).items() if not name.startswith("_")}
    for name, related in value._state.fields_cache.items():
        data[f"related {name}"] = as_data(related, depth + 1) if depth < 5 else related
    return data


@pytest.fixture
def ids(study, personas, caption, make_user):
    """Ids for every argument a prepared read takes, of rows that make each read find
    something: a submitted annotation waiting for review with window corrections, a reviewer,
    a second annotator's of the same caption claimed by a reviewer whose claim expired; a consent
    the annotator accepted and guidelines; a caption nobody has."""
    annotator, reviewer = personas["annotator"], personas["reviewer"]
    other = make_user("other")
    Membership.objects.create(study=study, user=other, role=Membership.Role.ANNOTATOR)
    annotations_assign(study=study, annotators=[annotator, other], captions=[caption], overlap_share=1.0)
    submitted = complete(Annotation.objects.get(annotator=annotator), annotator)
    Annotation.objects.filter(pk=submitted.pk).update(undo_until=None)  # waiting for review now
    expired = complete(Annotation.objects.get(annotator=other), other)
    Annotation.objects.filter(pk=expired.pk).update(  # a claim the reviewer let expire
        state="in_review", reviewer=reviewer, claim_expires_at=timezone.now() - timedelta(minutes=1))
    # Asked after the work above (the annotator would have to accept it first), and accepted.
    version, _ = consent_save(study=study, actor=personas["admin"], text="You agree to take part.")
    consent_accept(study=study, user=annotator, version=version.number)
    guidelines_save(study=study, actor=personas["admin"], text="Correct what is wrong; keep what is right.")
    annotator_pass = CorrectionPass.objects.get(annotation=submitted, kind=CorrectionPass.Kind.ANNOTATOR)
    assert annotator_pass.windows.exists()
    # A practice item (rows made directly: only the practice set's read is under test here).
    GoldItem.objects.create(study=study, caption=caption, gold=submitted, made_by=personas["admin"],
                            in_practice_set=True)
    # A second caption the annotator has open: their work in progress.
    captions_import_jsonl(study=study, data=jsonl(CAPTION_A))
    second = Caption.objects.get(clip__name="a")
    annotations_assign(study=study, annotators=[annotator], captions=[second])
    in_progress = annotation_open(annotation=second.annotations.get(), actor=annotator)
    # And a practice item, copied from it (rows made directly: only the read is under test).
    captions_import_jsonl(study=study, data=jsonl({**CAPTION_A, "model": "m2"}))
    practice = Annotation.objects.get(pk=in_progress.pk)
    practice.pk, practice.purpose, practice.state = None, Annotation.Purpose.PRACTICE, "assigned"
    practice.caption = Caption.objects.get(clip__name="a", model__name="m2")
    practice.save()
    # A caption nobody has yet (what a new participant is given).
    captions_import_jsonl(study=study, data=jsonl({**CAPTION_A, "model": "m3"}))
    # The annotator came through a recruitment link, practised, and withdrew (rows made directly:
    # only the reads of them are under test here).
    link = RecruitmentLink.objects.create(study=study, token_hash="0" * 64, participant_param="PROLIFIC_PID", cap=10,
                                          quota=2, completion_code="C0DE", created_by=personas["admin"])
    Participant.objects.create(study=study, link=link, user=annotator, pid_hash="1" * 64, pseudonym="P-0001")
    Qualification.objects.create(study=study, user=annotator, state=Qualification.State.PRACTISING, attempts=1)
    Withdrawal.objects.create(study=study, user=annotator, pseudonym=annotator.username)
    session = SessionStore()
    session["who"] = annotator.pk
    session.create()
    return {"session_key": session.session_key, "now": timezone.now(), "slug": study.slug,
            "study_id": study.pk, "user_id": annotator.pk, "annotation_id": submitted.pk,
            "annotator_id": annotator.pk, "reviewer_id": reviewer.pk, "caption_id": caption.pk,
            "correction_pass_id": annotator_pass.pk, "state": "in_progress"}


def _arguments(read: PreparedRead) -> list[str]:
    code = read.build.__code__
    return list(code.co_varnames[code.co_argcount:code.co_argcount + code.co_kwonlyargcount])


def test_every_prepared_read_gives_what_its_queryset_gives(ids):
    assert len(EVERY_PREPARED_READ) >= 15, EVERY_PREPARED_READ
    found_nothing = []
    for read in EVERY_PREPARED_READ:
        if read.build.__module__.startswith("tests."):
            continue
        arguments = {name: ids[name] for name in _arguments(read)}
        with transaction.atomic():  # the review picks lock what they read
            plain = [as_data(row) for row in read.queryset(**arguments)]
            for _ in range(2):  # built on the first call, reused on the second
                assert [as_data(row) for row in read(**arguments)] == plain, read
        if not plain:
            found_nothing.append(repr(read))
    assert found_nothing == [], found_nothing


@prepared
def _expired_claims(*, reviewer_id: int):
    return Annotation.objects.filter(reviewer_id=reviewer_id, claim_expires_at__lt=Now()).values("pk")


def test_a_read_is_built_once_and_runs_as_one_statement_with_each_calls_ids(ids, monkeypatch, personas):
    @prepared
    def member_roles(*, study_id: int, user_id: int):
        return Membership.objects.filter(study_id=study_id, user_id=user_id).values("role")

    built = []
    original = SQLCompiler.as_sql
    monkeypatch.setattr(SQLCompiler, "as_sql", lambda self, *a, **k: built.append(1) or original(self, *a, **k))
    assert member_roles(study_id=ids["study_id"], user_id=personas["annotator"].pk) == [{"role": "annotator"}]
    assert built
    built.clear()
    with CaptureQueriesContext(connection) as queries:
        assert member_roles(study_id=ids["study_id"], user_id=personas["reviewer"].pk) == [{"role": "reviewer"}]
        assert member_roles(study_id=ids["study_id"], user_id=personas["outsider"].pk) == []
    assert built == [] and len(queries) == 2


def test_sql_time_stays_current_in_a_read_built_earlier(annotation, personas):
    """Now() is the database's time at each run, not the time the read was built."""
    reviewer = personas["reviewer"]
    Annotation.objects.filter(pk=annotation.pk).update(
        reviewer=reviewer, claim_expires_at=timezone.now() + timedelta(hours=1))
    assert _expired_claims(reviewer_id=reviewer.pk) == []
    Annotation.objects.filter(pk=annotation.pk).update(claim_expires_at=timezone.now() - timedelta(seconds=1))
    assert _expired_claims(reviewer_id=reviewer.pk) == [{"pk": annotation.pk}]


def test_one_gives_the_row_or_the_models_does_not_exist(annotation):
    @prepared
    def by_id(*, annotation_id: int):
        return Annotation.objects.select_related("caption__clip").annotate(
            has_passes=Exists(CorrectionPass.objects.filter(annotation_id=OuterRef("pk")))).filter(pk=annotation_id)

    found = by_id.one(annotation_id=annotation.pk)
    assert found.caption.clip.name == "b" and found.has_passes is True
    with pytest.raises(Annotation.DoesNotExist, match=f"annotation_id': {annotation.pk + 999}"):
        by_id.one(annotation_id=annotation.pk + 999)


def test_what_a_prepared_read_refuses(annotation):
    for wrong in (1.5, True, None, datetime(2026, 1, 1)):  # the last one naive
        with pytest.raises(PreparedReadError, match="must be an id .* or an aware time"):
            _expired_claims(reviewer_id=wrong)

    @prepared
    def ignores_its_id(*, annotation_id: int):
        return Annotation.objects.filter(state="in_progress")

    with pytest.raises(PreparedReadError, match=r"does not use \['annotation_id'\] as they are given"):
        ignores_its_id(annotation_id=annotation.pk)

    @prepared
    def prefetches(*, annotation_id: int):
        return Annotation.objects.filter(pk=annotation_id).prefetch_related("passes")

    with pytest.raises(PreparedReadError, match="does not prefetch"):
        prefetches(annotation_id=annotation.pk)

    with transaction.atomic():
        assert _locks(annotation_id=annotation.pk) == [{"pk": annotation.pk}]


@prepared
def _locks(*, annotation_id: int):
    return Annotation.objects.filter(pk=annotation_id).select_for_update().values("pk")


@pytest.mark.django_db(transaction=True)
def test_a_read_that_locks_rows_is_refused_outside_a_transaction():
    with pytest.raises(TransactionManagementError, match="outside of a transaction"):
        _locks(annotation_id=1)


def test_constant_words_are_written_into_the_sql_and_nothing_else_is(annotation, personas):
    """A state or a purpose is in the statement's text, so the database plans knowing it; an
    argument, a constant that is not a word (quotes, spaces) and a percent sign stay as they were."""
    @prepared
    def mixed(*, annotation_id: int, key: str):
        return Annotation.objects.filter(
            pk=annotation_id, state__in=["in_progress", "submitted"], purpose="work",
            return_comment__in=["", "it's 100% wrong", key, "in_progress"],
        ).values("pk")

    plain = mixed.queryset(annotation_id=annotation.pk, key="in_progress")
    assert mixed(annotation_id=annotation.pk, key="in_progress") == list(plain) == [{"pk": annotation.pk}]
    [plan] = [plan for (read, *_), plan in connection.redline_prepared_reads.items() if read is mixed]
    assert "IN ('in_progress', 'submitted')" in plan.sql and "= 'work'" in plan.sql, plan.sql
    assert "IN ('', %s, %s, 'in_progress')" in plan.sql, plan.sql
    assert plan.slots == ["annotation_id", None, "key"] and plan.constants[1] == "it's 100% wrong"
    Annotation.objects.filter(pk=annotation.pk).update(return_comment="it's 100% wrong")
    assert mixed(annotation_id=annotation.pk, key="x") == [{"pk": annotation.pk}]
    Annotation.objects.filter(pk=annotation.pk).update(return_comment="x")
    assert mixed(annotation_id=annotation.pk, key="x") == [{"pk": annotation.pk}]
    assert mixed(annotation_id=annotation.pk, key="y") == []


def test_a_written_id_is_a_plan_of_its_own_and_a_connection_keeps_a_bounded_number(annotation, monkeypatch):
    """An id written into the SQL makes a statement per value (here the annotation's and one no
    row has), each giving its plain queryset's rows; past PLANS_KEPT the connection starts again."""
    import annotation.prepared as prepared_module

    read = PreparedRead(lambda *, annotation_id, state: Annotation.objects.filter(
        pk=annotation_id, state=state).values("pk"), written=("annotation_id",))
    EVERY_PREPARED_READ.remove(read)  # made here, not a read of the product's
    assert read(annotation_id=annotation.pk, state=annotation.state) == [{"pk": annotation.pk}]
    assert read(annotation_id=annotation.pk + 1, state=annotation.state) == []
    assert read(annotation_id=-5, state=annotation.state) == []  # no row has a negative id
    sqls = sorted(plan.sql for (each, *_), plan in connection.redline_prepared_reads.items() if each is read)
    assert len(sqls) == 2, sqls
    assert {f'"id" = {annotation.pk} ' in sql or f'"id" = {annotation.pk + 1} ' in sql for sql in sqls} == {True}
    assert sqls[0] != sqls[1]
    with pytest.raises(PreparedReadError, match="must be ids"):
        read(annotation_id="1", state=annotation.state)
    monkeypatch.setattr(prepared_module, "PLANS_KEPT", 2)
    for offset in range(2, 7):  # values not read yet: each makes a plan
        assert read(annotation_id=annotation.pk + offset, state=annotation.state) == []
        assert len(connection.redline_prepared_reads) <= 2
    assert read(annotation_id=annotation.pk, state=annotation.state) == [{"pk": annotation.pk}]


@pytest.mark.postgres
def test_on_postgresql_a_read_run_twice_is_a_prepared_statement_of_the_connection(annotation):
    """DATABASE_PREPARED_STATEMENTS (on by default): PostgreSQL keeps the plan of the workspace read."""
    from annotation.api.workflow import workspace_read

    def prepared_here() -> set[str]:
        with connection.cursor() as cursor:
            cursor.execute("SELECT statement FROM pg_prepared_statements")
            return {row[0] for row in cursor.fetchall()}

    for _ in range(3):
        assert workspace_read.one(annotation_id=annotation.pk, user_id=1).pk == annotation.pk
    assert any('FROM "annotation_annotation"' in statement and '"annotation_study"' in statement
               for statement in prepared_here())


def test_an_id_no_64_bit_column_holds_finds_nothing_and_pages_answer_404(annotation, personas, client):
    """A URL may carry any number of digits: the read finds nothing, as Django's lookups do,
    instead of overflowing SQLite's integers (a 500)."""
    from annotation.api.workflow import workspace_read

    huge = 2**70
    me = personas["annotator"].pk
    assert workspace_read(annotation_id=huge, user_id=me) == []
    assert workspace_read(annotation_id=-huge, user_id=me) == []
    with pytest.raises(Annotation.DoesNotExist):
        workspace_read.one(annotation_id=huge, user_id=me)
    assert workspace_read(annotation_id=2**63 - 1, user_id=me) == []  # the largest id still runs the statement
    client.force_login(personas["annotator"])
    for path in (f"/annotate/{huge}/", f"/api/annotations/{huge}/", f"/review/{huge}/"):
        assert client.get(path).status_code == 404, path
    answer = client.patch(f"/api/annotations/{huge}/draft/", {"base_version": 1, "changes": {}},
                          content_type="application/json")
    assert answer.status_code == 404
