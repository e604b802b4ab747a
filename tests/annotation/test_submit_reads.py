"""A submit (and the overview's lock) reads what it checks once: the passes with the annotation (in the read that checks
the submit may be made), the pass's window corrections once (for the checks and the audit
snapshot alike), the guideline version inside the UPDATE that records it, and the review risk
from two prepared reads. Every statement costs a round trip and every ORM read its compiling:
a submit was 19 statements and 26 ms of server CPU, the costliest request an annotator makes."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotation.errors import ServiceError
from annotation.models import Annotation, Caption, CorrectionPass, GuidelineVersion
from annotation.services.guidelines import guidelines_save
from annotation.services.workflow import annotation_save, annotation_submit, overview_lock

pytestmark = pytest.mark.django_db


def ready(annotation, annotator) -> Annotation:
    """The annotation with a complete annotator pass, not yet submitted."""
    def save(item, **changes):
        return annotation_save(annotation_id=item.pk, actor=annotator, base_version=item.version, changes=changes)

    annotation = save(annotation, overview={"verdict": "reject", "text": "A test card.", "modes": ["factual"]})
    annotation = overview_lock(annotation_id=annotation.pk, actor=annotator, base_version=annotation.version)
    annotation = save(annotation, windows=[{"index": 0, "verdict": "accept"}, {"index": 1, "verdict": "accept"},
                                           {"index": 2, "verdict": "accept"}])
    return save(annotation, segmentation={"verdict": "accept"})


def reads_of(sql: list[str], table: str) -> list[str]:
    return [s for s in sql if s.startswith("SELECT") and s.split(" FROM ", 1)[1].startswith(f'"{table}"')]


def test_a_submit_reads_the_passes_and_window_rows_once_and_the_guidelines_in_its_update(
        annotation, personas, study):
    annotator = personas["annotator"]
    guidelines_save(study=study, actor=personas["admin"], text="Correct what is wrong.")
    annotation = ready(annotation, annotator)
    with CaptureQueriesContext(connection) as captured:
        submitted = annotation_submit(annotation_id=annotation.pk, actor=annotator, base_version=annotation.version)
    sql = [q["sql"] for q in captured.captured_queries]
    assert reads_of(sql, "annotation_correctionpass") == []  # read with the annotation
    assert len(reads_of(sql, "annotation_windowcorrection")) == 2  # the pass's rows, and the risk's
    assert reads_of(sql, "annotation_guidelineversion") == []
    assert submitted.state == "submitted"
    stored = CorrectionPass.objects.get(annotation=annotation, kind=CorrectionPass.Kind.ANNOTATOR)
    assert stored.guideline_version_id == GuidelineVersion.objects.get(study=study).pk
    assert annotation.risk_reasons == []  # the risk is stored by the submit
    stored = Annotation.objects.get(pk=annotation.pk)
    assert stored.risk > 0 and stored.risk_reasons == submitted.risk_reasons == ["near-total overview repair"]


def test_an_overview_lock_reads_the_passes_with_the_annotation(annotation, personas):
    annotator = personas["annotator"]
    annotation = annotation_save(annotation_id=annotation.pk, actor=annotator, base_version=annotation.version,
                                 changes={"overview": {"verdict": "accept"}})
    with CaptureQueriesContext(connection) as captured:
        locked = overview_lock(annotation_id=annotation.pk, actor=annotator, base_version=annotation.version)
    sql = [q["sql"] for q in captured.captured_queries]
    assert reads_of(sql, "annotation_correctionpass") == reads_of(sql, "annotation_windowcorrection") == []
    assert locked.overview_locked_at is not None


def test_a_submit_before_any_guidelines_records_none(annotation, personas):
    annotator = personas["annotator"]
    annotation = ready(annotation, annotator)
    annotation_submit(annotation_id=annotation.pk, actor=annotator, base_version=annotation.version)
    stored = CorrectionPass.objects.get(annotation=annotation, kind=CorrectionPass.Kind.ANNOTATOR)
    assert stored.guideline_version_id is None


def test_an_incomplete_pass_is_refused_naming_each_unjudged_window(annotation, personas):
    annotator = personas["annotator"]
    annotation = annotation_save(annotation_id=annotation.pk, actor=annotator, base_version=annotation.version,
                                 changes={"overview": {"verdict": "accept"}})
    annotation = overview_lock(annotation_id=annotation.pk, actor=annotator, base_version=annotation.version)
    annotation = annotation_save(annotation_id=annotation.pk, actor=annotator, base_version=annotation.version,
                                 changes={"windows": [{"index": 1, "verdict": "accept"}]})
    with pytest.raises(ServiceError) as refused:
        annotation_submit(annotation_id=annotation.pk, actor=annotator, base_version=annotation.version)
    assert "Window 1: accept or reject it." in str(refused.value)
    assert "Window 2" not in str(refused.value)
    assert "Window 3: accept or reject it." in str(refused.value)
    assert Annotation.objects.get(pk=annotation.pk).state == "in_progress"


def test_a_submit_builds_no_sql_once_one_was_made(annotation, personas, study, make_user, monkeypatch):
    """Every statement of a submit (the checks' reads, its UPDATEs, the risk's reads, the audit
    event) is built once per connection: the second submit (another annotator's, of another
    model's caption of the clip) builds no SQL."""
    from django.db.models.sql import compiler

    from annotation.services.captions import captions_import_jsonl
    from annotation.services.studies import membership_grant
    from annotation.services.workflow import annotation_open, annotations_assign
    from tests.conftest import CAPTION_B, jsonl

    annotator = personas["annotator"]
    guidelines_save(study=study, actor=personas["admin"], text="Correct what is wrong.")
    first = ready(annotation, annotator)
    annotation_submit(annotation_id=first.pk, actor=annotator, base_version=first.version)
    captions_import_jsonl(study=study, data=jsonl({**CAPTION_B, "model": "m2"}))  # the same clip, another model
    caption = Caption.objects.get(clip__study=study, clip__name="b", model__name="m2")
    other = make_user("other")
    membership_grant(study=study, user=other, role="annotator")
    annotations_assign(study=study, annotators=[other], captions=[caption])
    second = ready(annotation_open(annotation=caption.annotations.get(), actor=other), other)
    built = []
    for kind in (compiler.SQLCompiler, compiler.SQLInsertCompiler, compiler.SQLUpdateCompiler):
        original = kind.as_sql
        monkeypatch.setattr(kind, "as_sql", lambda self, *a, _original=original, **k: built.append(
            type(self).__name__) or _original(self, *a, **k))
    submitted = annotation_submit(annotation_id=second.pk, actor=other, base_version=second.version)
    assert built == []
    assert submitted.state == Annotation.objects.get(pk=second.pk).state == "submitted"
