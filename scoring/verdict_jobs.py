"""The scoring job of each final verdict (an approval or an amendment), made exactly once.

The verdict's commit runs :func:`score_final_verdict` (a hook of annotation.services.workflow).
A process that stops between the commit and that hook (PostgreSQL dropping right after the
commit, the web process killed) never runs it: the recovery clock (scoring/jobs_recovery.py)
finds such verdicts with :func:`score_verdicts_recover` and makes their jobs. Both make a job
through :func:`verdict_job_create`, which holds the annotation's row while it looks for the
verdict's job: two workers' clocks, or a clock and the hook, make one job between them.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone

from annotation.models import Annotation
from annotation.rules import workflow
from annotation.selectors.counted import counted_annotations
from annotation.services.study_state import ALLOWED, Write, study_allows
from scoring.models import ScoreJob
from scoring.services import score_clip_live, score_job_create

logger = logging.getLogger(__name__)

#: How far back recovery looks for a verdict without its job: verdicts older than this (made
#: while verdicts were not scored, say) are left as they are.
RECOVERY_WINDOW = timedelta(days=1)
#: The verdict's time is the web process's clock, a job's that of the process that made it: for
#: recovery, a job made up to this much before the verdict is the verdict's (a worker's clock a
#: little behind must not make a job every round).
CLOCK_SKEW = timedelta(seconds=60)


def verdict_job_create(*, annotation_id: int, skew: timedelta = timedelta(0)) -> ScoreJob | None:
    """Make the scoring job of the annotation's final verdict (sent once this commits), unless it
    has one made since its verdict (less ``skew``), or should have none: not approved (any more),
    a hidden gold check or work on a gold item (not counted), or its study's state refuses
    scoring (closed, archived). The annotation's row is held meanwhile, so two callers at once
    make one job. Returns the job made, if any."""
    with transaction.atomic():
        annotation = (
            counted_annotations(Annotation.objects.select_for_update(of=("self",)))
            .filter(pk=annotation_id, state=workflow.APPROVED, reviewed_at__isnull=False)
            .select_related("caption__clip__study")
            .first()
        )
        if annotation is None or not study_allows(annotation.caption.clip.study, Write.SCORING):
            return None
        if ScoreJob.objects.filter(kind=ScoreJob.Kind.VERDICT, annotation_id=annotation_id,
                                   created_at__gte=annotation.reviewed_at - skew).exists():
            return None
        return score_job_create(study=annotation.caption.clip.study, kind=ScoreJob.Kind.VERDICT,
                                annotation=annotation)


def score_final_verdict(annotation_id: int) -> None:
    """The final-verdict hook: queue a verdict job for the annotation (after its commit), and
    the re-scoring of its clip (:func:`scoring.services.score_clip_live`)."""
    if not settings.SCORING_ON_FINAL_VERDICT:
        return
    try:
        job = verdict_job_create(annotation_id=annotation_id)
        if job is not None and job.annotation is not None:
            score_clip_live(job.annotation.caption.clip)
    except Exception:  # noqa: BLE001 - the verdict is committed; scoring must not undo the request
        logger.exception("could not queue scoring for annotation %s", annotation_id)


def score_verdicts_recover() -> dict[str, list[int]]:
    """Make the jobs of the final verdicts of the last ``RECOVERY_WINDOW`` that have none (their
    hook was lost with the process that committed them), each once, with the re-scoring of their
    clips; nothing while ``SCORING_ON_FINAL_VERDICT`` is off. Returns ``{"resumed": [job ids],
    "failed": []}``."""
    report: dict[str, list[int]] = {"resumed": [], "failed": []}
    if not settings.SCORING_ON_FINAL_VERDICT:
        return report
    scoring_states = [state for state, writes in ALLOWED.items() if Write.SCORING in writes]
    unscored = (
        counted_annotations(Annotation.objects.filter(
            state=workflow.APPROVED, reviewed_at__gte=timezone.now() - RECOVERY_WINDOW,
            caption__clip__study__state__in=scoring_states,
        ))
        .exclude(Exists(ScoreJob.objects.filter(
            kind=ScoreJob.Kind.VERDICT, annotation_id=OuterRef("pk"),
            created_at__gte=OuterRef("reviewed_at") - CLOCK_SKEW)))
        .order_by("reviewed_at", "pk")
        .values_list("pk", flat=True)
    )
    for annotation_id in list(unscored):
        job = verdict_job_create(annotation_id=annotation_id, skew=CLOCK_SKEW)
        if job is not None:
            logger.warning("the final verdict of annotation %s had no scoring job: made job %s",
                           annotation_id, job.pk)
            report["resumed"].append(job.pk)
            if job.annotation is not None:
                score_clip_live(job.annotation.caption.clip)
    return report
