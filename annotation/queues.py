"""Read-only views of the workflow: an annotator's queue and the QC review queue.

The review queue can put risky items first. An item's risk adds up signals a
reviewer would want to check before anything else:
- a large overview edit (words changed, scaled by the study's largest threshold),
- near-total repairs (overview or any window below the near-total cut),
- a fast accept: the overview accepted after little active time with little of the clip watched,
- disagreement with another annotator of the same caption (overview verdicts differ).
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from typing import Any

from annotation import workflow
from annotation.models import Annotation, CorrectionPass, Study
from scoring import edits

FAST_ACCEPT_SECONDS = 20.0
LITTLE_WATCHED_SHARE = 0.5


def annotator_queue(*, study: Study, annotator) -> dict[str, Any]:
    """The annotator's items: returned first (with the comment), then in progress, then new."""
    annotations = (
        Annotation.objects.filter(caption__clip__study=study, annotator=annotator)
        .select_related("caption__clip", "caption__model")
        .order_by("assigned_at", "pk")
    )
    order = {workflow.RETURNED: 0, workflow.IN_PROGRESS: 1, workflow.ASSIGNED: 2}
    items = sorted(
        (
            {
                "id": a.pk,
                "state": a.state,
                "clip": a.caption.clip.name,
                "model": a.caption.model.alias,
                "windows": a.caption.windows.count(),
                "return_comment": a.return_comment,
                "url": f"/annotate/{a.pk}/",
            }
            for a in annotations
        ),
        key=lambda item: order.get(item["state"], 3),
    )
    counts = Counter(item["state"] for item in items)
    done = sum(counts[s] for s in (workflow.SUBMITTED, workflow.IN_REVIEW, workflow.APPROVED))
    return {"counts": dict(counts), "total": len(items), "done": done, "items": items}


def watched_share(telemetry: Any) -> float:
    """The share of the clip the annotator watched, from 0 to 1; 0 when it is missing or
    unreadable (telemetry written before saves were validated must not stop the queue)."""
    value = telemetry.get("watched_share") if isinstance(telemetry, dict) else None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 0.0
    try:
        share = float(value)
    except OverflowError:
        return 0.0
    return min(max(share, 0.0), 1.0) if math.isfinite(share) else 0.0


def _risk(annotation: Annotation, correction: CorrectionPass | None, *, scale: int, cut: float,
          disagreement: bool) -> tuple[float, list[str]]:
    reasons: list[str] = []
    risk = 0.0
    if correction is None:
        return risk, reasons
    if correction.overview_verdict == CorrectionPass.Verdict.REJECT:
        size = edits.edit_size(annotation.caption.overview, correction.overview_text, near_total_cut=cut)
        risk += min(size.words_changed / scale, 2.0)
        if size.words_changed >= scale:
            reasons.append(f"large overview edit ({size.words_changed} words)")
        if size.near_total:
            risk += 1.0
            reasons.append("near-total overview repair")
    near_total_windows = sum(
        1
        for row in correction.windows.all()
        if row.verdict == CorrectionPass.Verdict.REJECT
        and edits.near_total(
            edits.char_similarity(f"{row.window.scene} {row.window.shot}", f"{row.scene} {row.shot}"), cut
        )
    )
    if near_total_windows:
        risk += 0.5 * near_total_windows
        reasons.append(f"{near_total_windows} near-total window repair(s)")
    watched = watched_share(annotation.telemetry)
    if (
        correction.overview_verdict == CorrectionPass.Verdict.ACCEPT
        and annotation.active_seconds < FAST_ACCEPT_SECONDS
        and watched < LITTLE_WATCHED_SHARE
    ):
        risk += 1.5
        reasons.append(f"fast accept ({annotation.active_seconds:.0f} s, {watched:.0%} watched)")
    if disagreement:
        risk += 1.0
        reasons.append("annotators disagree on the overview")
    return risk, reasons


def review_queue(
    *,
    study: Study,
    reviewer,
    order: str = "risk",
    model_alias: str | None = None,
    annotator: str | None = None,
    state: str | None = None,
) -> dict[str, Any]:
    """Submitted and in-review annotations (not the reviewer's own), riskiest or oldest first."""
    states = [state] if state else [workflow.SUBMITTED, workflow.IN_REVIEW]
    annotations = (
        Annotation.objects.filter(caption__clip__study=study, state__in=states)
        .exclude(annotator=reviewer)
        .select_related("caption__clip", "caption__model", "annotator", "reviewer")
        .prefetch_related("passes__windows__window")
    )
    if model_alias:
        annotations = annotations.filter(caption__model__alias=model_alias)
    if annotator:
        annotations = annotations.filter(annotator__username=annotator)
    annotations = list(annotations)
    verdicts: dict[int, set[str]] = defaultdict(set)
    for caption_id, verdict in CorrectionPass.objects.filter(
        annotation__caption__in=[a.caption_id for a in annotations], kind=CorrectionPass.Kind.ANNOTATOR,
        annotation__state__in=[workflow.SUBMITTED, workflow.IN_REVIEW, workflow.APPROVED],
    ).values_list("annotation__caption_id", "overview_verdict"):
        verdicts[caption_id].add(verdict)
    scale = max(study.word_thresholds or [16])
    items = []
    for annotation in annotations:
        correction = next((p for p in annotation.passes.all() if p.kind == CorrectionPass.Kind.ANNOTATOR), None)
        risk, reasons = _risk(
            annotation, correction, scale=scale, cut=study.near_total_cut,
            disagreement=len(verdicts[annotation.caption_id]) > 1,
        )
        items.append({
            "id": annotation.pk,
            "state": annotation.state,
            "clip": annotation.caption.clip.name,
            "model": annotation.caption.model.alias,
            "annotator": annotation.annotator.username,
            "reviewer": annotation.reviewer.username if annotation.reviewer_id else None,
            "claim_expires_at": annotation.claim_expires_at.isoformat() if annotation.claim_expires_at else None,
            "submitted_at": annotation.submitted_at.isoformat() if annotation.submitted_at else None,
            "overview_verdict": correction.overview_verdict if correction else "",
            "risk": round(risk, 3),
            "risk_reasons": reasons,
            "url": f"/review/{annotation.pk}/",
        })
    if order == "oldest":
        items.sort(key=lambda item: (item["submitted_at"] or "", item["id"]))
    else:
        items.sort(key=lambda item: (-item["risk"], item["submitted_at"] or "", item["id"]))
    return {"order": order, "count": len(items), "items": items}
