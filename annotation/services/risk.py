"""The review risk of submitted annotations (annotation.rules.risk), stored for the review queue."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from django.db import connection

from annotation.models import (
    Annotation,
    CorrectionPass,
    Study,
    WindowCorrection,
)
from annotation.prepared import prepared
from annotation.rules import risk, workflow
from annotation.services.annotation_common import _passes_joined
from scoring.metrics.edits import EditSizing

SUBMITTED_ONCE = (workflow.SUBMITTED, workflow.IN_REVIEW, workflow.APPROVED)


def annotation_risk_refresh(*, caption_id: int) -> None:
    """Store the review risk (annotation.rules.risk) of the caption's submitted annotations.

    Called when one of them is submitted: its own signals are new, and a second annotator's
    verdict can make the annotations of the caption disagree. Two prepared reads and one
    UPDATE, whatever the size of the study.
    """
    _risks_store(_caption_submitted(caption_id=caption_id), _caption_window_rows(caption_id=caption_id))


def annotations_risk_refresh(*, study: Study) -> int:
    """annotation_risk_refresh for every caption of the study at once, for annotations stored
    without being submitted here (a bundle import): the same risks, from the same two reads and
    one UPDATE statement. Returns how many changed."""
    return _risks_store(list(_submitted(caption__clip__study=study)),
                        _submitted_window_rows(correction_pass__annotation__caption__clip__study=study))


# What the risk reads of a window correction.
WINDOW_ROW = ("correction_pass_id", "verdict", "scene", "shot", "window__scene", "window__shot")


def _submitted(**scope: Any):
    """The submitted annotations in `scope` (whole captions) with their study and their passes
    (annotation_common's `read_annotator_pass`)."""
    return _passes_joined(Annotation.objects.filter(state__in=SUBMITTED_ONCE, **scope)
                          .select_related("caption__clip__study")).order_by("pk")


def _submitted_window_rows(**scope: Any):
    """The window corrections of the annotator passes of those annotations (WINDOW_ROW)."""
    return WindowCorrection.objects.filter(
        correction_pass__annotation__state__in=SUBMITTED_ONCE, correction_pass__kind=CorrectionPass.Kind.ANNOTATOR,
        **scope).values(*WINDOW_ROW)


@prepared
def _caption_submitted(*, caption_id: int):
    return _submitted(caption_id=caption_id)


@prepared
def _caption_window_rows(*, caption_id: int):
    return _submitted_window_rows(correction_pass__annotation__caption_id=caption_id)


def _risks_store(annotations: list[Annotation], rows: Iterable[Mapping[str, Any]]) -> int:
    """Compute and store the risk of the submitted `annotations` (as _submitted reads them) of
    whole captions (disagreement is between the annotations of one caption), from their
    annotator passes and those passes' window correction `rows` (WINDOW_ROW)."""
    passes = {a.pk: a.read_annotator_pass for a in annotations if a.read_annotator_pass is not None}
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
