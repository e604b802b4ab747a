"""How current a study's scores are: when each metric family was last brought up to date, what
scoring is still pending, and how many final verdicts are newer than the scores.

A family is *brought up to date* by a whole-study scoring job that finished (done, or partly
failed in other families) without an error in that family: it scored everything missing or
stale. A final verdict is *newer than the scores* when it became final after that and no clip
job of its clip (live scores, :func:`scoring.services.score_clip_live`) finished after it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from django.db.models import Max, Sum

from annotation.models import Annotation, Study
from annotation.rules import workflow
from annotation.selectors.counted import counted_annotations
from scoring import families
from scoring.metrics.registry import METRICS
from scoring.models import ScoreJob

Status = ScoreJob.Status
#: How many recent jobs are read to find each family's last full run.
RECENT_JOBS = 50


@dataclass
class Freshness:
    #: family -> when a whole-study job last brought it up to date (None: never)
    families: dict[str, datetime | None] = field(default_factory=dict)
    #: the oldest of those: the time every score is at least as recent as
    as_of: datetime | None = None
    newest_verdict: datetime | None = None
    #: final verdicts that became final after the scores (and are not re-scored since)
    newer_verdicts: int = 0
    pending_jobs: int = 0
    pending_items: int = 0

    @property
    def stale(self) -> bool:
        """Whether some scores are older than the newest final verdicts."""
        return self.newer_verdicts > 0

    def as_dict(self) -> dict:
        return {
            "families": {name: at.isoformat() if at else None for name, at in self.families.items()},
            "as_of": self.as_of.isoformat() if self.as_of else None,
            "newest_verdict": self.newest_verdict.isoformat() if self.newest_verdict else None,
            "newer_verdicts": self.newer_verdicts,
            "stale": self.stale,
            "pending_jobs": self.pending_jobs,
            "pending_items": self.pending_items,
        }


def _family_errors(job: ScoreJob) -> set[str]:
    failed = set()
    for key in job.errors:
        metric = key.split("@", 1)[0]
        if metric in METRICS:
            failed.add(families.family_of(metric))
        elif key == "job":
            failed.update(families.family_of(name) for name in job.metrics if name in METRICS)
    return failed


def scores_freshness(study: Study) -> Freshness:
    """How current the study's scores are (see the module docstring). A fixed number of
    queries, whatever the study's size."""
    result = Freshness()
    full = ScoreJob.objects.filter(
        study=study, kind=ScoreJob.Kind.STUDY, clip__isnull=True,
        status__in=[Status.DONE, Status.PARTIAL],
    ).order_by("-finished_at", "-pk").only("metrics", "errors", "finished_at")[:RECENT_JOBS]
    for job in full:
        failed = _family_errors(job)
        for name in job.metrics:
            if name not in METRICS:
                continue
            family = families.family_of(name)
            if family not in failed and result.families.get(family) is None:
                result.families[family] = job.finished_at
            result.families.setdefault(family, None)
    known = [at for at in result.families.values() if at is not None]
    if result.families and len(known) == len(result.families):
        result.as_of = min(known)
    approved = counted_annotations(Annotation.objects.filter(caption__clip__study=study, state=workflow.APPROVED))
    result.newest_verdict = approved.aggregate(newest=Max("reviewed_at"))["newest"]
    if result.families:
        newer = approved
        if result.as_of is not None:
            newer = newer.filter(reviewed_at__gt=result.as_of)
        verdicts = list(newer.values_list("caption__clip_id", "reviewed_at"))
        clip_jobs = dict(
            ScoreJob.objects.filter(study=study, clip__isnull=False, status=Status.DONE)
            .values("clip_id").annotate(last=Max("started_at")).values_list("clip_id", "last")
        )
        result.newer_verdicts = sum(
            1 for clip_id, at in verdicts
            if clip_jobs.get(clip_id) is None or clip_jobs[clip_id] < at
        )
    pending = ScoreJob.objects.filter(study=study, status__in=[Status.QUEUED, Status.RUNNING])
    totals = pending.aggregate(total=Sum("progress_total"), done=Sum("progress_done"))
    result.pending_jobs = pending.count()
    result.pending_items = (totals["total"] or 0) - (totals["done"] or 0)
    return result
