"""The review risk of submitted annotations (annotation.rules.risk), stored for the review queue."""

from __future__ import annotations

import json

from django.db import connection

from annotation.models import (
    Annotation,
    CorrectionPass,
    Study,
    WindowCorrection,
)
from annotation.rules import risk, workflow
from scoring.metrics.edits import EditSizing

SUBMITTED_ONCE = (workflow.SUBMITTED, workflow.IN_REVIEW, workflow.APPROVED)


def annotation_risk_refresh(*, caption_id: int) -> None:
    """Store the review risk (annotation.rules.risk) of the caption's submitted annotations.

    Called when one of them is submitted: its own signals are new, and a second annotator's
    verdict can make the annotations of the caption disagree. A handful of queries, whatever
    the size of the study.
    """
    _risks_store(Annotation.objects.filter(caption_id=caption_id))


def annotations_risk_refresh(*, study: Study) -> int:
    """annotation_risk_refresh for every caption of the study at once, for annotations stored
    without being submitted here (a bundle import): the same risks, from the same handful of
    queries and one UPDATE statement. Returns how many changed."""
    return _risks_store(Annotation.objects.filter(caption__clip__study=study))


def _risks_store(scope) -> int:
    """Compute and store the risk of the submitted annotations in `scope` (a queryset of whole
    captions' annotations: disagreement is between the annotations of one caption)."""
    submitted = scope.filter(state__in=SUBMITTED_ONCE)
    annotations = list(submitted.select_related("caption__clip__study").order_by("pk"))
    if not annotations:
        return 0
    passes = {
        p.annotation_id: p
        for p in CorrectionPass.objects.filter(annotation__in=submitted, kind=CorrectionPass.Kind.ANNOTATOR)
    }
    windows: dict[int, list[risk.WindowJudgement]] = {}
    rows = WindowCorrection.objects.filter(
        correction_pass__annotation__in=submitted, correction_pass__kind=CorrectionPass.Kind.ANNOTATOR
    ).values_list("correction_pass_id", "verdict", "scene", "shot", "window__scene", "window__shot")
    for pass_id, verdict, scene, shot, original_scene, original_shot in rows:
        windows.setdefault(pass_id, []).append(
            risk.WindowJudgement(verdict, f"{original_scene} {original_shot}", f"{scene} {shot}")
        )
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
