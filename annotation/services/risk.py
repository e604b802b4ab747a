"""The review risk of submitted annotations (annotation.rules.risk), stored for the review queue."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from django.db import connection
from django.db.models import FilteredRelation, Q

from annotation.models import (
    Annotation,
    CorrectionPass,
    Study,
    WindowCorrection,
)
from annotation.prepared import prepared
from annotation.rules import risk, workflow
from scoring.metrics.edits import EditSizing

SUBMITTED_ONCE = (workflow.SUBMITTED, workflow.IN_REVIEW, workflow.APPROVED)


def annotation_risk_refresh(*, caption_id: int) -> None:
    """Store the review risk (annotation.rules.risk) of the caption's submitted annotations.

    Called when one of them is submitted: its own signals are new, and a second annotator's
    verdict can make the annotations of the caption disagree. Two prepared reads and one
    UPDATE, whatever the size of the study.
    """
    annotations = _caption_submitted(caption_id=caption_id)
    passes = {a.pk: a.read_annotator_pass for a in annotations if a.read_annotator_pass is not None}
    _risks_store(annotations, passes, _caption_window_rows(caption_id=caption_id))


def annotations_risk_refresh(*, study: Study) -> int:
    """annotation_risk_refresh for every caption of the study at once, for annotations stored
    without being submitted here (a bundle import): the same risks, from three queries and one
    UPDATE statement. Returns how many changed."""
    submitted = Annotation.objects.filter(caption__clip__study=study, state__in=SUBMITTED_ONCE)
    passes = {p.annotation_id: p for p in CorrectionPass.objects.filter(
        annotation__in=submitted, kind=CorrectionPass.Kind.ANNOTATOR)}
    rows = WindowCorrection.objects.filter(
        correction_pass__annotation__in=submitted, correction_pass__kind=CorrectionPass.Kind.ANNOTATOR
    ).values(*WINDOW_ROW)
    return _risks_store(list(submitted.select_related("caption__clip__study").order_by("pk")), passes, rows)


# What the risk reads of a window correction.
WINDOW_ROW = ("correction_pass_id", "verdict", "scene", "shot", "window__scene", "window__shot")


@prepared
def _caption_submitted(*, caption_id: int):
    """The caption's submitted annotations with their study and, as `read_annotator_pass`,
    their annotator pass."""
    pass_of_annotator = FilteredRelation("passes", condition=Q(passes__kind=CorrectionPass.Kind.ANNOTATOR))
    return (Annotation.objects.filter(caption_id=caption_id, state__in=SUBMITTED_ONCE)
            .annotate(read_annotator_pass=pass_of_annotator)
            .select_related("caption__clip__study", "read_annotator_pass").order_by("pk"))


@prepared
def _caption_window_rows(*, caption_id: int):
    """The window corrections of the annotator passes of the caption's submitted annotations."""
    return WindowCorrection.objects.filter(
        correction_pass__annotation__caption_id=caption_id,
        correction_pass__annotation__state__in=SUBMITTED_ONCE,
        correction_pass__kind=CorrectionPass.Kind.ANNOTATOR,
    ).values(*WINDOW_ROW)


def _risks_store(
    annotations: list[Annotation], passes: Mapping[int, CorrectionPass], rows: Iterable[Mapping[str, Any]]
) -> int:
    """Compute and store the risk of the submitted `annotations` (with their study) of whole
    captions (disagreement is between the annotations of one caption), from their annotator
    `passes` by annotation and those passes' window correction `rows` (WINDOW_ROW)."""
    if not annotations:
        return 0
    windows: dict[int, list[risk.WindowJudgement]] = {}
    for row in rows:
        windows.setdefault(row["correction_pass_id"], []).append(risk.WindowJudgement(
            row["verdict"], f"{row['window__scene']} {row['window__shot']}", f"{row['scene']} {row['shot']}"))
    verdicts: dict[int, set[str]] = {}
    for annotation in annotations:
        if annotation.pk in passes:
            verdicts.setdefault(annotation.caption_id, set()).add(passes[annotation.pk].overview_verdict)
    changed = []
    for annotation in annotations:
        correction = passes.get(annotation.pk)
        if correction is None:
            continue
        study = annotation.caption.clip.study
        score, reasons = risk.review_risk(
            original_overview=annotation.caption.overview,
            overview_verdict=correction.overview_verdict,
            overview_text=correction.overview_text,
            windows=windows.get(correction.pk, []),
            active_seconds=annotation.active_seconds,
            telemetry=annotation.telemetry,
            disagreement=len(verdicts[annotation.caption_id]) > 1,
            scale=max(study.word_thresholds or [16]),
            sizing=EditSizing.of(study),
        )
        if (score, reasons) != (annotation.risk, annotation.risk_reasons):
            annotation.risk, annotation.risk_reasons = score, reasons
            changed.append(annotation)
    if changed:
        # One statement, its parameters sent once per row: bulk_update would compile a CASE
        # branch per annotation, which costs more than computing the risks.
        with connection.cursor() as cursor:
            cursor.executemany(
                f"UPDATE {Annotation._meta.db_table} SET risk = %s, risk_reasons = %s WHERE id = %s",
                [(a.risk, json.dumps(a.risk_reasons), a.pk) for a in changed],
            )
    return len(changed)
